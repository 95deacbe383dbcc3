"""The ingest reproduces the published table's rows from the raw transcripts."""

import json
import shutil

import pyarrow.parquet as pq
import pytest

from apiflow.analysis.ingest import find_trial_files, ingest
from apiflow.analysis.rows import PUBLISHED_SCHEMA, abstention_of
from apiflow.cli import main
from apiflow.errors import UsageError
from apiflow.results.rows import ROW_SCHEMA

from ._helpers import PUBLISHED, TRANSCRIPTS, our_record


def _published_rows() -> dict:
    return {(r["model"], r["task_id"], r["trial"]): r for r in pq.read_table(PUBLISHED).to_pylist()}


@pytest.mark.parametrize("workers", [1, 2])
def test_ingest_reproduces_the_published_rows_exactly(tmp_path, workers):
    out = tmp_path / "fx.parquet"
    stats = ingest(
        [TRANSCRIPTS], out, workers=workers, chunk_files=5
    )  # small chunks: exercise the pool and order
    table = pq.read_table(out)
    assert (stats.files, stats.rows, table.num_rows) == (42, 42, 42)
    assert table.schema == PUBLISHED_SCHEMA == pq.read_schema(PUBLISHED)
    published = _published_rows()
    for row in table.to_pylist():
        assert row == published[(row["model"], row["task_id"], row["trial"])]
    keys = [(r["model"], r["task_id"], r["trial"]) for r in table.to_pylist()]
    assert keys == sorted(keys)  # the published table's order


def test_derivations_of_the_less_obvious_columns(tmp_path):
    out = tmp_path / "fx.parquet"
    ingest([TRANSCRIPTS], out, workers=1)
    rows = {(r["model"], r["task_id"]): r for r in pq.read_table(out).to_pylist()}
    unscored = rows[("qwen3p7-plus", "v56-w11-sub01")]
    assert unscored["verdict"] == "" and unscored["passed"] is None and unscored["g1_passed"] is None
    assert unscored["n_tool_calls"] == 40  # counted from messages (the verifier has no count here)
    sol = rows[("gpt-5.6-sol", "v56-w05-sub06")]
    assert (sol["abstained"], sol["epoch"], sol["trial"], sol["partial_score"]) == (
        "report_blocked",
        5,
        5,
        0.0,
    )
    assert rows[("claude-haiku-4-5-20251001", "v56-w11-sub06")]["n_tool_calls"] == 63  # verifier says 60
    assert rows[("kimi-k3", "v56-w02-sub13")]["panel"] == "board-update"
    assert rows[("gpt-5.5", "v56-w01-sub02")]["panel"] == "original-19"


def test_abstention_is_read_from_the_verifier_explanation():
    assert abstention_of("agent abstained (clarify): 'which plan?'") == "clarify"
    assert abstention_of("agent abstained (report_blocked): 'x'") == "report_blocked"
    assert (
        abstention_of("1/3 predicates matched; failed: G2 answer; first failure: agent abstained (clarify)")
        is None
    )
    assert abstention_of("") is None and abstention_of(None) is None


def test_find_trial_files_skips_metadata_and_orders_by_model_task_trial(tmp_path):
    for name in (
        "m/b-w01-sub01-t2.json",
        "m/b-w01-sub01-t1.json",
        "a/b-w01-sub02-t1.json",
        "m/_manifest.json",
    ):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("{}")
    names = [f"{p.parent.name}/{p.name}" for p in find_trial_files([tmp_path])]
    assert names == ["a/b-w01-sub02-t1.json", "m/b-w01-sub01-t1.json", "m/b-w01-sub01-t2.json"]


def test_bad_files_are_usage_errors(tmp_path):
    (tmp_path / "bad-w01-sub01-t1.json").write_text("{not json")
    with pytest.raises(UsageError, match="bad-w01-sub01-t1.json"):
        ingest([tmp_path], tmp_path / "out.parquet", workers=1)
    with pytest.raises(UsageError, match="no such file"):
        ingest([tmp_path / "missing"], tmp_path / "out.parquet")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="no trial JSON"):
        ingest([empty], tmp_path / "out.parquet")


def test_our_records_flatten_to_the_grid_row(tmp_path):
    for epoch, (verdict, termination) in enumerate([("C", "answered"), ("", "provider_error")], 1):
        path = tmp_path / "runs" / f"sample-w01-sub01-t{epoch}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            json.dumps(our_record("apiflow/oracle", "sample-w01-sub01", epoch, verdict, termination))
        )
    out = tmp_path / "ours.parquet"
    ingest([tmp_path / "runs"], out, workers=1)
    table = pq.read_table(out)
    assert table.schema == ROW_SCHEMA
    assert table["harness"].to_pylist() == [False, True]
    assert table["termination"].to_pylist() == ["answered", "provider_error"]


def test_cli_ingest(tmp_path, capsys):
    src = tmp_path / "src"
    shutil.copytree(TRANSCRIPTS / "gpt-5.5", src / "gpt-5.5")
    out = tmp_path / "out.parquet"
    assert main(["transcripts", "ingest", str(src), "--out", str(out)]) == 0
    assert pq.read_table(out).num_rows == 4
    assert "ingested 4 trial files" in capsys.readouterr().err
    assert main(["transcripts", "ingest", str(src), "--out", str(tmp_path / "x.csv")]) == 2
