import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from apiflow.results.record import Termination
from apiflow.results.rows import (
    PUBLISHED_COLUMNS,
    ROW_COLUMNS,
    ROW_SCHEMA,
    TrialRow,
    published_row,
    record_to_row,
    rows_to_table,
    task_shape,
)

FIXTURES = Path(__file__).resolve().parents[1] / "data"  # copies of ../shared/fixtures
PUBLISHED = Path(__file__).resolve().parents[2] / "configs" / "panels" / "published-trials.parquet"


def test_schema_is_derived_from_the_row_model():
    import dataclasses

    assert ROW_COLUMNS == tuple(f.name for f in dataclasses.fields(TrialRow))
    assert len(set(ROW_COLUMNS)) == len(ROW_COLUMNS)


def test_first_columns_equal_the_published_table():
    published = pq.read_schema(PUBLISHED)
    n = len(published.names)
    assert tuple(published.names) == PUBLISHED_COLUMNS == ROW_COLUMNS[:n]
    for name in published.names:
        assert ROW_SCHEMA.field(name).type == published.field(name).type, name


def test_published_row_reproduces_the_published_table_for_every_fixture_transcript():
    table = pq.read_table(PUBLISHED).to_pylist()
    by_key = {(r["model"], r["task_id"], r["trial"]): r for r in table}
    files = sorted((FIXTURES / "transcripts").glob("*/*.json"))
    assert len(files) == 42
    for path in files:
        trial = json.loads(path.read_text())
        expected = by_key[(trial["model"], trial["task_id"], trial["trial"])]
        assert published_row(trial, panel=expected["panel"]) == expected, path.name


def test_record_to_row_has_exactly_the_schema_columns(make_record):
    row = record_to_row(make_record(retries=[{"attempt": 1, "wait_s": 0.5}, {"attempt": 2, "wait_s": 1.25}]))
    assert tuple(row) == ROW_COLUMNS
    assert row["n_tool_calls"] == 2 and row["n_messages"] == 6
    assert row["retries"] == 2 and row["retry_wait_s"] == pytest.approx(1.75)
    assert row["world"] == "w01" and row["kind"] == "solo" and row["length"] == 2
    assert row["tokens_reasoning"] == 3 and row["harness"] is False
    table = rows_to_table([row])
    assert table.schema == ROW_SCHEMA and table.num_rows == 1


def test_harness_outcomes_are_flagged_and_unscored(make_record):
    row = record_to_row(make_record(passed=None, termination=Termination.PROVIDER_ERROR))
    assert row["harness"] is True and row["termination"] == "provider_error"
    assert row["verdict"] == "" and row["passed"] is None and row["g1_passed"] is None


def test_task_shape():
    assert task_shape("v56-w08-chain-1to12") == ("w08", "chain", 12)
    assert task_shape("sample-w01-sub03") == ("w01", "solo", 3)
    with pytest.raises(ValueError):
        task_shape("nonsense")
