"""Damaged objects never crash a reader and never count (docs/design/042, "Damaged objects").

A small real store (oracle trials on the sample bank, in batches and alone) has objects overwritten
with garbage, truncated, emptied or flipped a byte, on a local folder and on S3 (moto). Every reader
then returns without a pyarrow error, names the object on stderr, moves it under ``quarantine/``
(never deleting it), leaves its trials out of ``done_ids`` — and only its trials: one stored in
another good object stays done — and returns each trial once; a resume stores exactly those again.
"""

from __future__ import annotations

import io
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import storekit as kit

from apiflow.results.rows import ROW_SCHEMA
from apiflow.results.store import ResultStore

HOW = ["garbage", "truncated", "empty"]


@pytest.fixture(scope="module")
def records():
    return kit.oracle_records()


def _rows_once(table) -> list[str]:
    ids = table.column("trial_id").to_pylist()
    assert len(ids) == len(set(ids)), "a trial returned twice"
    return ids


@pytest.mark.parametrize("how", HOW)
def test_a_damaged_batch_object_is_set_aside_and_only_its_trials_run_again(store, records, how, capsys):
    first, second, alone = records[:4], records[4:8], records[8]
    kit.batch(store, first)
    damaged = kit.batch(store, second)
    kit.alone(store, alone)
    kit.alone(store, second[0])  # also stored alone (two attempts): it stays done
    bad = kit.damage(store, damaged, how)

    reader = kit.reader(store)
    done = reader.done_ids()  # no ArrowInvalid, no exception at all
    assert done == kit.ids([*first, alone, second[0]])
    err = capsys.readouterr().err
    assert (
        f"{store.quarantine.relative(damaged)}: " in err
        and "moved to" in err
        and "quarantine/rows/batches/" in err
    )
    assert [q.path for q in reader.quarantine.found] == [damaged]
    assert not store.objects.exists(damaged) and store.objects.cat(kit.aside(store, damaged)) == bad  # kept
    for fresh in (reader, kit.reader(store)):
        assert sorted(_rows_once(fresh.read_rows())) == sorted(done) and sorted(fresh.row_ids()) == sorted(
            done
        )
        assert fresh.recorded_spend()[2] == 3  # the good objects: a batch and two trials alone
        assert fresh.failed_ids() == set()
    # The resume: planned minus done runs again, once, in a batch of its own; nothing is stored twice.
    todo = [r for r in records[:9] if r.apiflow.trial_id not in done]
    assert kit.ids(todo) == kit.ids(second[1:])
    kit.batch(store, todo)
    again = kit.reader(store)
    assert again.done_ids() == kit.ids(records[:9]) and sorted(again.row_ids()) == sorted(
        kit.ids(records[:9])
    )
    assert sorted(_rows_once(again.read_rows())) == sorted(kit.ids(records[:9]))
    assert again.quarantine.found == []


@pytest.mark.parametrize("how", [*HOW, "flipped"])
def test_a_damaged_per_trial_row_is_not_done_and_its_trial_is_stored_again(store, records, how, capsys):
    kept, hurt = records[0], records[1]
    kit.alone(store, kept)
    path = kit.alone(store, hurt)
    kit.damage(store, path, how)
    reader = kit.reader(store)
    assert reader.done_ids() == kit.ids([kept])
    err = capsys.readouterr().err
    assert store.quarantine.relative(path) in err and ("checksum mismatch" in err) == (how == "flipped")
    assert store.objects.exists(kit.aside(store, path)) and not reader.is_done(
        hurt.model, hurt.apiflow.trial_id
    )
    assert _rows_once(reader.read_rows()) == [kept.apiflow.trial_id]
    assert reader.put_trial(hurt, kit.row(hurt)) is True  # the resume stores it again, once
    assert sorted(kit.reader(store).row_ids()) == sorted(kit.ids([kept, hurt]))


def test_every_reader_survives_and_compaction_leaves_damaged_objects_out(store, records, capsys):
    from apiflow.results.record import Termination

    good, hurt = kit.batch(store, records[:3]), kit.batch(store, records[3:6])
    failed = records[6].model_copy(deep=True)
    failed.apiflow.termination = Termination.PROVIDER_ERROR
    failed.apiflow.harness_error = "RateLimitError: retries exhausted"
    assert store.put_trial(failed, kit.row(failed))
    failure_row = next(p for p in store.objects.list("failures", (".parquet", ".arrow")))
    kit.damage(store, hurt, "truncated")
    kit.damage(store, failure_row, "garbage")
    reader = kit.reader(store)
    assert reader.read_rows(failures=True).num_rows == 0 and reader.failed_ids() == set()
    assert reader.recorded_spend() == (
        pytest.approx(sum(r.apiflow.cost_usd or 0 for r in records[:3])),
        0.0,
        1,
    )
    summary = reader.compact()
    assert summary.trials == 3 and summary.rows_read == 3
    assert sorted(_rows_once(kit.reader(store).read_rows())) == sorted(kit.ids(records[:3]))
    assert {q.path for q in reader.quarantine.found} == {hurt, failure_row}
    assert kit.reader(store).done_ids() == kit.ids(records[:3]) and store.objects.exists(good)
    err = capsys.readouterr().err
    assert err.count("apiflow: ") == 2 and "quarantine/failures/" in err


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage"])
def test_a_damaged_transcript_archive_un_commits_its_batch_on_resume(store, records, how, capsys):
    """The resume notices: the batch object recorded its archive's size, so a truncated, emptied
    or replaced archive is checked whole, set aside with its batch object, and its trials run again."""
    kit.batch(store, records[:4])
    ids = [r.apiflow.trial_id for r in records[4:8]]
    kit.batch(store, records[4:8])
    archive = store.archive_path(ids)
    kit.damage(store, archive, how)
    reader = kit.reader(store)
    assert reader.done_ids() == kit.ids(records[:4])
    err = capsys.readouterr().err
    assert "transcripts/batches/" in err and "quarantine/transcripts/batches/" in err
    assert [q.path for q in reader.quarantine.found] == [archive, store.batch_path(ids)]
    assert store.objects.exists(kit.aside(store, archive)) and store.objects.exists(
        kit.aside(store, store.batch_path(ids))
    )
    assert reader.unpack_archives() == (4, 0)  # the good batch's transcripts only
    with pytest.raises(FileNotFoundError):
        reader.read_transcript(records[4].model, ids[0])
    kit.batch(store, records[4:8])  # the resume: the same batch again, under the same (now free) names
    again = kit.reader(store)
    assert again.done_ids() == kit.ids(records[:8]) and again.unpack_archives() == (8, 0)
    assert all(again.read_transcript(r.model, r.apiflow.trial_id)["apiflow"]["trial_id"] == r.apiflow.trial_id
               for r in records[:8])  # fmt: skip


def test_an_archive_damaged_in_place_is_caught_by_its_first_transcript_reader(store, records, capsys):
    """Same size, one byte changed: the resume's size check cannot see it; the first reader of its
    transcripts checks it whole (seal and CRC-32s), sets it aside with its batch, and the resume
    then runs that batch's trials again."""
    from apiflow.results.source import open_source

    store.write_manifest({"grid_id": "g"})
    kit.batch(store, records[:3])
    ids = [r.apiflow.trial_id for r in records[3:6]]
    kit.batch(store, records[3:6])
    archive = store.archive_path(ids)
    data = store.objects.cat(archive)
    kit.damage(store, archive, "flipped")
    assert len(store.objects.cat(archive)) == len(data)
    assert kit.reader(store).done_ids() == kit.ids(records[:6])  # not noticed yet
    shown = [p for chunk in open_source(store.url, store.storage_options).read_chunks(10) for p, _ in chunk]
    assert sorted(p.rsplit("/", 1)[-1].removesuffix(".json") for p in shown) == sorted(kit.ids(records[:3]))
    assert "is damaged (Bad CRC-32" in capsys.readouterr().err
    assert kit.reader(store).done_ids() == kit.ids(records[:3])


def test_a_damaged_transcript_of_a_trial_run_alone_un_commits_it(store, records, capsys):
    from apiflow.interop.export import iter_trials

    store.write_manifest({"grid_id": "g"})
    kept, hurt = records[0], records[1]
    kit.alone(store, kept)
    row = kit.alone(store, hurt)
    transcript = store.transcript_path(hurt.model, hurt.apiflow.trial_id)
    kit.damage(store, transcript, "truncated")
    exported = [t["apiflow"]["trial_id"] for t in iter_trials(store.url, store.storage_options or None)]
    assert exported == [kept.apiflow.trial_id]  # export skips it (it used to refuse the whole grid)
    assert store.objects.exists(kit.aside(store, transcript)) and store.objects.exists(kit.aside(store, row))
    reader = kit.reader(store)
    assert reader.done_ids() == kit.ids([kept])
    with pytest.raises(FileNotFoundError):
        reader.read_transcript(hurt.model, hurt.apiflow.trial_id)
    assert "not whole JSON" in capsys.readouterr().err


def test_objects_written_before_checksums_read_as_before(tmp_path, records, capsys):
    """An old store: rows without a digest in their footer, an archive without a seal. Whole ones
    are read as before; a damaged one is still caught, by its parse."""
    store = ResultStore(str(tmp_path / "out"))
    for record in records[:3]:  # old per-trial rows: plain pq.write_table
        sink = io.BytesIO()
        pq.write_table(pa.Table.from_pylist([kit.row(record)], schema=ROW_SCHEMA), sink)
        store.create_only(store.row_path(record.model, record.apiflow.trial_id), sink.getvalue())
        store.overwrite(store.transcript_path(record.model, record.apiflow.trial_id), record.to_json_bytes())
    batch = records[3:6]
    ids = [r.apiflow.trial_id for r in batch]
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([kit.row(r) for r in batch], schema=ROW_SCHEMA), sink)
    store.create_only(store.batch_path(ids), sink.getvalue())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:  # no seal in its comment
        for record in batch:
            archive.writestr(
                f"model={record.model.replace('/', '_')}-x/{record.apiflow.trial_id}.json", b"{}"
            )
    store.overwrite(store.archive_path(ids), buffer.getvalue())
    assert store.done_ids() == kit.ids(records[:6]) and len(_rows_once(store.read_rows())) == 6
    assert store.unpack_archives() == (3, 0) and store.compact().trials == 6
    assert store.read_transcript(records[0].model, records[0].apiflow.trial_id)["apiflow"]["trial_id"]
    assert capsys.readouterr().err == ""  # nothing set aside
    kit.damage(store, store.row_path(records[0].model, records[0].apiflow.trial_id), "truncated")
    assert kit.reader(store).done_ids() == kit.ids(records[:6])  # its compacted copy is a good object
    assert sorted(_rows_once(kit.reader(store).read_rows())) == sorted(kit.ids(records[:6]))
    kit.damage(store, store.archive_path(ids), "truncated")
    assert kit.reader(store).unpack_archives() == (0, 0)  # the unsealed archive's damage: caught by its parse
    assert "not a whole ZIP archive" in capsys.readouterr().err


def test_a_name_taken_under_quarantine_is_never_overwritten(tmp_path, records):
    store = ResultStore(str(tmp_path / "out"))
    path = kit.batch(store, records[:2])
    first = kit.damage(store, path, "garbage")
    assert store.done_ids() == set()
    kit.batch(store, records[:2])  # stored again under the same name, then damaged again
    second = kit.damage(store, path, "truncated")
    assert store.done_ids() == set()
    assert (
        store.objects.cat(kit.aside(store, path)) == first
        and store.objects.cat(kit.aside(store, path) + ".1") == second
    )
