"""The row's ``served`` column: last of ours (published columns untouched), and rows written before it read as null."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from apiflow.results.rows import PUBLISHED_COLUMNS, ROW_COLUMNS, ROW_SCHEMA, record_to_row, served_values
from apiflow.results.store import ResultStore


def _served(make_record, trial_id: str, served: list[list[str]]):
    record = make_record(trial_id=trial_id)
    record.apiflow.served = served
    return record


def test_served_is_appended_after_our_columns_and_reads_back(make_record):
    assert ROW_COLUMNS[-1] == "served" and ROW_COLUMNS[: len(PUBLISHED_COLUMNS)] == PUBLISHED_COLUMNS
    assert ROW_SCHEMA.field("served").type == pa.string()
    row = record_to_row(_served(make_record, "a" * 32, [["gpt-5", "fp_2", "r1"], ["gpt-5", "fp_1", "r2"]]))
    assert served_values(row["served"]) == ["gpt-5@fp_1", "gpt-5@fp_2"] and served_values(None) == []
    assert record_to_row(make_record())["served"] is None  # no provider call named anything


def test_a_store_of_rows_written_before_the_column_reads_them_as_null(tmp_path, make_record):
    store = ResultStore(str(tmp_path / "out"))
    old = make_record(trial_id="o" * 32)
    before = pa.schema([f for f in ROW_SCHEMA if f.name != "served"])
    sink = io.BytesIO()
    pq.write_table(
        pa.Table.from_pylist([record_to_row(old)], schema=before), sink
    )  # as an older apiflow wrote it
    store.create_only(store.row_path(old.model, old.apiflow.trial_id), sink.getvalue())
    new = _served(make_record, "n" * 32, [["gpt-5", "fp_1", "r1"]])
    assert store.put_trial(new, record_to_row(new))
    for _ in range(2):  # the row objects, then the compacted file that folds both in
        table = store.read_rows()
        assert table.schema == ROW_SCHEMA
        assert dict(
            zip(table.column("trial_id").to_pylist(), table.column("served").to_pylist(), strict=True)
        ) == {"o" * 32: None, "n" * 32: "gpt-5@fp_1"}
        store.compact()
