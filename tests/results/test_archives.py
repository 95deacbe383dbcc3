"""Transcript archives (docs/design/042, "One transcript archive per batch"): one ZIP per batch, members byte-identical to the
per-trial files, counted only once their batch row object exists."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from apiflow.results import archives
from apiflow.results.rows import record_to_row
from apiflow.results.source import open_source
from apiflow.results.store import ResultStore, model_token


def test_an_archive_holds_its_members_in_order_byte_for_byte_and_is_a_pure_function_of_them(tmp_path):
    members = [("model=m-1/b.json", b'{"x":1}'), ("model=m-1/a.json", "é\u2028".encode()), ("model=n-2/c.json", b"")]
    data = archives.archive_bytes(members)
    assert data == archives.archive_bytes(members)  # no wall clock inside
    assert archives.member_names(data) == [name for name, _ in members]
    assert list(archives.read_members(data)) == members
    with zipfile.ZipFile(io.BytesIO(data)) as opened:
        assert opened.testzip() is None
        assert all(i.compress_type == zipfile.ZIP_STORED for i in opened.infolist())
        opened.extractall(tmp_path)  # unzip gives the per-trial layout back
    assert (tmp_path / "model=m-1" / "a.json").read_bytes() == "é\u2028".encode()
    assert (tmp_path / "model=m-1" / "b.json").stat().st_mode & 0o777 == 0o644
    assert archives.trial_id_of("model=m-1/abc.json") == "abc"
    with pytest.raises(KeyError):
        list(archives.read_members(data, ["model=m-1/zzz.json"]))


@pytest.mark.parametrize("count", [0, 1, 3, 70])
def test_the_packed_writer_writes_zipfiles_bytes(count):
    names = ["model=m-1/{:064x}.json", "modèl-ü/{}.json", "x/{}"]
    members = [(names[i % 3].format(i), bytes(range(i % 256)) * (i % 5)) for i in range(count)]
    assert archives.archive_bytes(members) == archives._zipfile_bytes(members)
    assert list(archives.read_members(archives.archive_bytes(members))) == members


def test_past_the_classic_limits_zipfile_writes_the_archive(monkeypatch):
    members = [("a.json", b"x" * 100), ("b.json", b"y")]
    monkeypatch.setattr(archives, "_LIMIT", 50)  # stands in for 4 GiB
    assert archives.archive_bytes(members) == archives._zipfile_bytes(members)
    monkeypatch.setattr(archives, "_zipfile_bytes", lambda m: b"fallback")
    assert archives.archive_bytes(members) == b"fallback"  # the size check sent it there


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def store(request, tmp_path):
    if request.param == "local":
        return ResultStore(str(tmp_path / "out"))
    url, options = request.getfixturevalue("s3_url")
    return ResultStore(url, storage_options=options)


def _put_batch(store, records):
    return store.put_batch([r.apiflow.trial_id for r in records], [(r, record_to_row(r)) for r in records])


def test_a_batch_writes_one_archive_and_no_per_trial_files(store, make_record):
    batch = [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(3)]
    assert _put_batch(store, batch)
    ids = [r.apiflow.trial_id for r in batch]
    assert store.objects.list("transcripts", ".json") == []
    assert store.committed_archives() == [store.archive_path(ids)]
    data = store.objects.cat(store.archive_path(ids))
    token = model_token(batch[0].model)
    assert archives.member_names(data) == [archives.member_name(token, i) for i in ids]
    for record, (_, body) in zip(batch, archives.read_members(data), strict=True):
        assert body == record.to_json_bytes()  # the bytes a per-trial file would hold
        assert store.read_transcript(record.model, record.apiflow.trial_id) == record.model_dump(mode="json")
    with pytest.raises(FileNotFoundError):
        store.read_transcript(batch[0].model, "f" * 32)


def test_an_archive_whose_batch_never_committed_is_not_read(store, make_record):
    """An attempt that died between its archive and its row object: the archive is there, the
    trials are not stored; the store reads no transcript from it."""
    record = make_record(trial_id="d" * 32)
    store.overwrite(
        store.archive_path(["d" * 32, "e" * 32]),
        archives.archive_bytes([(archives.member_name(model_token(record.model), "d" * 32), record.to_json_bytes())]),
    )
    assert store.committed_archives() == [] and store.done_ids() == set()
    with pytest.raises(FileNotFoundError):
        store.read_transcript(record.model, "d" * 32)


def test_the_viewer_source_reads_committed_archives_once_per_trial(tmp_path, make_record):
    store = ResultStore(str(tmp_path / "out"))
    store.write_manifest({"grid_id": "g"})
    first = [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(3)]
    again = [make_record(trial_id=f"{i:032x}", epoch=i + 1, passed=False) for i in (2, 3)]  # 2 stored twice
    _put_batch(store, first)
    _put_batch(store, again)
    stale = make_record(trial_id="7" * 32)  # an uncommitted archive's trial: not shown
    store.overwrite(
        store.archive_path(["7" * 32, "8" * 32]),
        archives.archive_bytes([(archives.member_name(model_token(stale.model), "7" * 32), stale.to_json_bytes())]),
    )
    source = open_source(store.url)
    shown = [p.rsplit("/", 1)[-1].removesuffix(".json") for p in source.paths]
    assert sorted(shown) == [f"{i:032x}" for i in range(4)]  # each once; none of the stale archive
    read = dict(pair for chunk in source.read_chunks(2) for pair in chunk)
    assert set(read) == set(source.paths)
    by_trial = {p.rsplit("/", 1)[-1].removesuffix(".json"): body for p, body in read.items()}
    assert by_trial[f"{0:032x}"] == first[0].to_json_bytes() and by_trial[f"{3:032x}"] == again[1].to_json_bytes()
    # the twice-stored trial comes from the first archive in path order, whole
    archive_of_2 = source.members[next(p for p in source.paths if p.endswith(f"{2:032x}.json"))][0]
    assert archive_of_2 == min(store.archive_path([r.apiflow.trial_id for r in b]) for b in (first, again))


def test_readers_of_trial_files_refuse_a_grids_archives_rather_than_skip_them(tmp_path, make_record):
    """`transcripts ingest`, `regrade` and `view` pointed below a grid's folder (at its transcripts/)
    meet archives they cannot judge (committed or not is in rows/): a clear error, exit 2, no trial
    silently left out."""
    from apiflow.cli import main

    store = ResultStore(str(tmp_path / "out"))
    store.write_manifest({"grid_id": "g"})
    _put_batch(store, [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(2)])
    below = str(tmp_path / "out" / "transcripts")
    assert archives.is_archive_path(store.archive_path(["a"])) and not archives.is_archive_path(below + "/x.zip")
    for argv in (
        ["transcripts", "ingest", below, "--out", str(tmp_path / "t.parquet")],
        ["regrade", below],
        ["view", below, "--out", str(tmp_path / "site")],
    ):
        assert main(argv) == 2, argv
    with pytest.raises(Exception, match="transcript archive"):
        open_source(below)


def test_unpack_writes_committed_archives_as_one_file_a_trial(store, make_record, capsys):
    from apiflow.cli import main

    store.write_manifest({"grid_id": "g"})
    first = [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(3)]
    again = [make_record(trial_id=f"{i:032x}", epoch=i + 1, passed=False) for i in (2, 3)]  # 2 twice
    _put_batch(store, first)
    _put_batch(store, again)
    stale = make_record(trial_id="7" * 32)
    store.overwrite(  # an attempt that never committed: not unpacked
        store.archive_path(["7" * 32, "8" * 32]),
        archives.archive_bytes([(archives.member_name(model_token(stale.model), "7" * 32), stale.to_json_bytes())]),
    )
    options = ["--storage-options", json.dumps(store.storage_options)] if not store.local else []
    assert main(["transcripts", "unpack", store.url, *options]) == 0
    err = capsys.readouterr().err
    assert "wrote 4 transcript files" in err and "1 later copies of a trial skipped" in err
    files = sorted(store.objects.list("transcripts", ".json"))
    assert [f.rsplit("/", 1)[-1] for f in files] == [f"{i:032x}.json" for i in range(4)]
    shown = dict(pair for chunk in open_source(store.url, store.storage_options).read_chunks(10) for pair in chunk)
    for path in files:  # the same bytes the readers show for that trial
        trial_id = path.rsplit("/", 1)[-1]
        assert store.objects.cat(path) == next(b for p, b in shown.items() if p.endswith(trial_id))
    assert store.unpack_archives() == (4, 1)  # idempotent
    assert main(["transcripts", "unpack", str(store.url) + "-none", *options]) == 2


def test_a_damaged_archive_is_set_aside_not_a_traceback(tmp_path, make_record, capsys):
    """The viewer/export source meets an archive damaged after listing (a member's CRC no longer
    matches) or while listing (not a ZIP): named on stderr, moved under quarantine/ with its batch
    object, its trials left out and no longer stored (042, "Damaged objects"); the others are read."""
    from apiflow.errors import UsageError

    store = ResultStore(str(tmp_path / "out"))
    store.write_manifest({"grid_id": "g"})
    batch = [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(2)]
    other = [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in (2, 3)]
    _put_batch(store, batch)
    _put_batch(store, other)
    path = store.archive_path([r.apiflow.trial_id for r in batch])
    source = open_source(store.url)
    data = bytearray(store.objects.cat(path))
    data[400] ^= 0xFF  # a flipped byte inside the first member's body: its CRC no longer matches
    (tmp_path / "out" / path.split("/out/", 1)[1]).write_bytes(bytes(data))
    read = [p.rsplit("/", 1)[-1] for chunk in source.read_chunks(10) for p, _ in chunk]
    assert read == [f"{i:032x}.json" for i in (2, 3)]
    err = capsys.readouterr().err
    assert path.split("/out/", 1)[1] in err and "is damaged (Bad CRC-32" in err
    assert not store.objects.exists(path) and store.objects.exists(
        store.objects.path("quarantine", path.split("/out/", 1)[1])
    )
    assert store.done_ids() == {r.apiflow.trial_id for r in other}
    (
        tmp_path / "out" / store.archive_path([r.apiflow.trial_id for r in other]).split("/out/", 1)[1]
    ).write_bytes(b"not a zip")
    with pytest.raises(UsageError, match="no trial JSON"):
        open_source(store.url)  # both archives set aside: nothing left to show
    assert store.done_ids() == set()
