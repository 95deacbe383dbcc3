import threading

import pytest

from apiflow.errors import UsageError
from apiflow.results.record import Termination
from apiflow.results.rows import ROW_SCHEMA, record_to_row
from apiflow.results.store import ResultStore, model_token


@pytest.fixture(params=["local", "local-arrow", pytest.param("s3", marks=pytest.mark.s3)])
def store(request, tmp_path):
    if request.param.startswith("local"):
        return ResultStore(
            str(tmp_path / "out"), row_format="arrow" if "arrow" in request.param else "parquet"
        )
    url, options = request.getfixturevalue("s3_url")
    return ResultStore(url, storage_options=options)


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
