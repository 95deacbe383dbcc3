"""After ``grid compact`` every trial's transcript stays reachable (docs/design/042, "Damaged objects").

A batch's archive used to count only while its batch row object existed; after compaction that
object is no longer needed for rows (``done_ids`` and ``read_rows`` take the compacted files), and
once it was gone (removed, or set aside as damaged) ``transcripts unpack`` wrote none of that batch's
transcripts and view/export showed none. Now ``compacted/_batches.json`` commits them too. And a
transcript archive damaged after compaction withdraws exactly its trials from the compacted files.
"""

from __future__ import annotations

import json
import os

import pytest
import storekit as kit

from apiflow.analysis.table import load_table
from apiflow.cli import main
from apiflow.interop.export import iter_trials
from apiflow.results.source import open_source
from apiflow.results.store import ResultStore


@pytest.fixture(scope="module")
def records():
    return kit.oracle_records()


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def store(request, tmp_path):
    if request.param == "local":
        store = ResultStore(str(tmp_path / "out"))
    else:
        url, options = request.getfixturevalue("s3_url")
        store = ResultStore(url, storage_options=options)
    store.write_manifest({"grid_id": "g"})
    return store


def _options(store) -> list[str]:
    return [] if store.local else ["--storage-options", json.dumps(store.storage_options)]


def _remove(store, path: str) -> None:
    """Someone removes an object behind the store's back (a clean-up after compacting)."""
    if store.local:
        os.remove(path)
    else:
        store.fs.rm_file(path)


def _every_transcript_is_reachable(store, records) -> None:
    expected = kit.ids(records)
    source = open_source(store.url, store.storage_options or None)  # `apiflow view`
    shown = {json.loads(body)["apiflow"]["trial_id"] for chunk in source.read_chunks(5) for _, body in chunk}
    assert shown == expected
    exported = [t["apiflow"]["trial_id"] for t in iter_trials(store.url, store.storage_options or None)]
    assert sorted(exported) == sorted(expected)  # `apiflow transcripts export`
    reported = load_table([store.url], storage_options=store.storage_options or None)  # `apiflow report`
    assert sorted(reported.column("trial_id").to_pylist()) == sorted(expected)
    fresh = kit.reader(store)
    for record in records:
        assert fresh.read_transcript(record.model, record.apiflow.trial_id)["apiflow"]["trial_id"] == (
            record.apiflow.trial_id
        )
    assert main(["transcripts", "unpack", store.url, *_options(store)]) == 0  # `apiflow transcripts unpack`
    unpacked = {
        p.rsplit("/", 1)[-1].removesuffix(".json") for p in store.objects.list("transcripts", ".json")
    }
    assert unpacked == expected


@pytest.mark.parametrize("fate", ["removed", "damaged"])
def test_after_compact_every_verb_finds_every_transcript(store, records, fate, capsys):
    first, second, single = records[:4], records[4:8], records[8]
    paths = [kit.batch(store, first), kit.batch(store, second)]
    kit.alone(store, single)
    assert main(["grid", "compact", store.url, *_options(store)]) == 0
    for path in paths:  # the batch row objects go: their rows live on in the compacted files
        if fate == "removed":
            _remove(store, path)
        else:
            kit.damage(store, path, "garbage")
    if fate == "damaged":  # a compaction again reads every row object: it sets both aside
        assert main(["grid", "compact", store.url, *_options(store)]) == 0
        assert "quarantine/rows/batches/" in capsys.readouterr().err
        assert not any(store.objects.exists(p) for p in paths)
    assert kit.reader(store).done_ids() == kit.ids(records[:9])
    _every_transcript_is_reachable(store, records[:9])


@pytest.mark.parametrize("found_by", ["a transcript reader", "compacting again"])
def test_a_transcript_archive_damaged_after_compact_withdraws_exactly_its_trials(
    store, records, found_by, capsys
):
    first, second, twice = records[:4], records[4:8], records[4]
    kit.batch(store, first)
    kit.batch(store, second)
    kit.alone(store, twice)  # stored twice: alone too, with its own transcript
    store.compact()
    archive = store.archive_path([r.apiflow.trial_id for r in second])
    if found_by == "a transcript reader":
        kit.damage(store, archive, "flipped")  # same size: found by the first reader of its transcripts
        with pytest.raises(FileNotFoundError):
            kit.reader(store).read_transcript(second[1].model, second[1].apiflow.trial_id)
        assert "is damaged (Bad CRC-32" in capsys.readouterr().err
    else:
        kit.damage(store, archive, "truncated")  # not the size its batch object recorded
        assert main(["grid", "compact", store.url, *_options(store)]) == 0
        assert "not a whole ZIP archive" in capsys.readouterr().err
    lost = kit.ids(second[1:])
    assert kit.reader(store).done_ids() == kit.ids([*first, twice])  # withdrawn from the compacted files too
    assert sorted(kit.reader(store).read_rows().column("trial_id").to_pylist()) == sorted(
        kit.ids([*first, twice])
    )
    assert not lost & set(kit.reader(store).stored.compacted(["trial_id"])[0].column(0).to_pylist())
    kit.batch(store, second[1:])  # the resume runs exactly those again
    assert kit.reader(store).done_ids() == kit.ids(records[:8])
    _every_transcript_is_reachable(store, records[:8])
