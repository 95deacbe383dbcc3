import threading

import pytest

from apiflow.errors import UsageError
from apiflow.results.record import Termination
from apiflow.results.rows import ROW_SCHEMA, record_to_row
from apiflow.results.store import ResultStore, model_token


def test_rows_in_both_formats_read_as_one_table(tmp_path, make_record):
    parquet = ResultStore(str(tmp_path / "o"))
    arrow = ResultStore(str(tmp_path / "o"), row_format="arrow")
    assert _put(parquet, make_record(trial_id="1" * 32)) is True
    assert _put(arrow, make_record(trial_id="1" * 32)) is False  # already stored, whatever the format
    assert _put(arrow, make_record(trial_id="2" * 32)) is True
    table = parquet.read_rows()
    assert table.schema == ROW_SCHEMA and sorted(table.column("trial_id").to_pylist()) == ["1" * 32, "2" * 32]
    assert parquet.compact().trials == 2 and arrow.read_rows().num_rows == 2
    with pytest.raises(UsageError, match="row format"):
        ResultStore(str(tmp_path / "o"), row_format="csv")


def _put(store, record):
    return store.put_trial(record, record_to_row(record))


def test_one_row_per_trial_and_second_write_is_already_done(store, make_record):
    first = make_record(trial_id="a" * 32)
    assert _put(store, first) is True
    assert _put(store, make_record(trial_id="a" * 32, passed=False)) is False
    assert _put(store, make_record(trial_id="b" * 32, epoch=2)) is True
    assert store.done_ids() == {"a" * 32, "b" * 32}
    table = store.read_rows()
    assert table.schema == ROW_SCHEMA and table.num_rows == 2
    kept = {r["trial_id"]: r for r in table.to_pylist()}
    assert kept["a" * 32]["passed"] is True  # the first writer won
    assert store.read_transcript(first.model, "a" * 32)["apiflow"]["trial_id"] == "a" * 32


def test_concurrent_writers_of_one_trial_create_exactly_one_row(store, make_record):
    record = make_record(trial_id="c" * 32)
    row = record_to_row(record)
    results = []
    threads = [
        threading.Thread(target=lambda: results.append(store.put_trial(record, row))) for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 6 and results.count(True) == 1
    assert store.read_rows().num_rows == 1


def test_provider_errors_are_kept_apart_and_do_not_block_a_retry(store, make_record):
    failed = make_record(trial_id="d" * 32, passed=None, termination=Termination.PROVIDER_ERROR)
    assert _put(store, failed) is True
    assert store.done_ids() == set() and store.failed_ids() == {"d" * 32}
    assert store.read_rows().num_rows == 0
    assert store.read_rows(failures=True).num_rows == 1
    assert _put(store, make_record(trial_id="d" * 32)) is True  # a later resume succeeds
    assert store.failed_ids() == set() and store.done_ids() == {"d" * 32}


def test_manifest_is_written_once_and_guards_the_output(store):
    manifest = {"grid_id": "g1", "bank_hash": "x"}
    assert store.write_manifest(manifest) == manifest
    assert store.write_manifest({"grid_id": "g1", "bank_hash": "x", "later": True}) == manifest
    with pytest.raises(UsageError, match="another grid"):
        store.write_manifest({"grid_id": "g2"})
    assert store.read_manifest() == manifest


def test_compact_merges_per_model_and_readers_dedupe(store, make_record):
    for i in range(5):
        _put(store, make_record(trial_id=f"{i:032d}", epoch=i + 1))
    _put(store, make_record(model="apiflow/blank", trial_id="e" * 32))
    summary = store.compact()
    assert summary.trials == 6 and len(summary.files) == 2
    assert store.read_rows().num_rows == 6
    _put(store, make_record(trial_id="f" * 32))  # written after compaction
    assert store.read_rows().num_rows == 7
    again = store.compact()
    assert again.trials == 7 and store.read_rows().num_rows == 7
    assert sorted(store.read_rows().column("trial_id").to_pylist()) == sorted(
        [f"{i:032d}" for i in range(5)] + ["e" * 32, "f" * 32]
    )


def test_model_token_is_path_safe_and_distinct():
    assert "/" not in model_token("apiflow/sim:careful") and ":" not in model_token("apiflow/sim:careful")
    assert model_token("a/b") != model_token("a_b")


def _batch(store, records):
    return store.put_batch([r.apiflow.trial_id for r in records], [(r, record_to_row(r)) for r in records])


def test_a_batch_commits_its_rows_in_one_object_exactly_once(store, make_record):
    """Batched rows (042): one create-only object per batch, named by the batch's ids; a second
    attempt of the same batch stores nothing; harness outcomes of a batch stay retryable."""
    batch = [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(3)]
    failed = make_record(trial_id="9" * 32, passed=None, termination=Termination.HARNESS_ERROR)
    ids = [r.apiflow.trial_id for r in (*batch, failed)]
    assert store.put_batch(ids, [(r, record_to_row(r)) for r in (*batch, failed)]) is True
    assert store.put_batch(list(reversed(ids)), [(r, record_to_row(r)) for r in batch]) is False  # same key
    assert store.batch_ids(ids) == set(ids[:3]) and store.batch_ids(ids[:2]) == set()
    assert sorted(store.row_ids()) == sorted(ids[:3])  # one physical row each
    assert store.done_ids() == set(ids[:3]) and store.failed_ids() == {"9" * 32}
    assert sorted(store.read_rows().column("trial_id").to_pylist()) == sorted(ids[:3])
    assert store.read_transcript(batch[1].model, ids[1])["apiflow"]["trial_id"] == ids[1]
    assert store.recorded_spend()[2] == 2  # the batch object and the failure row


def test_batches_and_per_trial_rows_read_and_compact_as_one_store(store, make_record):
    """An old per-trial layout and new batches side by side: first row of a trial id wins, the same
    in read_rows and compact; compacted files split a batch by model."""
    _put(store, make_record(trial_id="a" * 32))  # per-trial layout (an existing result dir)
    again = make_record(trial_id="a" * 32, passed=False)  # a duplicate, stored in a batch
    other = make_record(model="apiflow/blank", trial_id="b" * 32)
    assert _batch(store, [again, other, make_record(trial_id="c" * 32, epoch=2)]) is True
    assert sorted(store.row_ids()) == ["a" * 32, "a" * 32, "b" * 32, "c" * 32]
    table = store.read_rows()
    assert table.num_rows == 3 and {r["trial_id"]: r["passed"] for r in table.to_pylist()}["a" * 32] is True
    summary = store.compact()
    assert summary.rows_read == 4 and summary.trials == 3 and len(summary.files) == 2
    after = {r["trial_id"]: r["passed"] for r in store.read_rows().to_pylist()}
    assert after == {"a" * 32: True, "b" * 32: True, "c" * 32: True}
    assert _batch(store, [make_record(trial_id="d" * 32), make_record(trial_id="e" * 32)]) is True
    assert store.read_rows().num_rows == 5 and store.done_ids() == {c * 32 for c in "abcde"}


def test_a_crash_before_the_batch_object_leaves_nothing_done(tmp_path, make_record, monkeypatch):
    """Killed between the transcripts and the batch object: no trial of the batch is done, and the
    rerun stores each exactly once."""
    store = ResultStore(str(tmp_path / "out"))
    batch = [make_record(trial_id=f"{i:032x}") for i in range(4)]
    real = store.create_only

    def crash(path, data):
        raise KeyboardInterrupt("killed mid-batch")

    monkeypatch.setattr(store, "create_only", crash)
    with pytest.raises(KeyboardInterrupt):
        _batch(store, batch)
    assert store.done_ids() == set() and store.batch_ids([r.apiflow.trial_id for r in batch]) == set()
    monkeypatch.setattr(store, "create_only", real)
    assert _batch(store, batch) is True and sorted(store.row_ids()) == sorted(
        r.apiflow.trial_id for r in batch
    )


def test_after_compact_done_ids_skips_the_batches_it_folded_in(store, make_record, monkeypatch):
    """compact names the batch objects it merged; done_ids then reads the compacted id column instead
    of those objects, and still reads a batch written after the compaction."""
    _batch(store, [make_record(trial_id=f"{i:032x}", epoch=i + 1) for i in range(3)])
    _put(store, make_record(trial_id="a" * 32))
    before = store.done_ids()
    store.compact()
    _batch(store, [make_record(trial_id="b" * 32), make_record(trial_id="c" * 32)])  # after the compaction
    read: list[str] = []
    cat_many = store.objects.cat_many

    def counting(paths):
        read.extend(paths)
        return cat_many(paths)

    monkeypatch.setattr(store.objects, "cat_many", counting)
    assert store.done_ids() == before | {"b" * 32, "c" * 32}
    assert len(read) == 1  # only the batch written after the compaction
