"""``apiflow report`` end to end: inputs of every kind, outputs, conventions, bad input."""

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from apiflow.analysis.ingest import ingest
from apiflow.analysis.summary import ReportOptions, summarize
from apiflow.analysis.table import dedupe_trials, load_table
from apiflow.analysis.trials import select_rows, trials_from_table
from apiflow.cli import main
from apiflow.results.record import TrialRecord
from apiflow.results.rows import ROW_SCHEMA, record_to_row

from ._helpers import PUBLISHED, TRANSCRIPTS, our_record

OUTPUTS = ("summary.json", "leaderboard.md", "report.html", "pass_vs_length.png", "reach_reliability.png",
           "cost_pareto.png", "world_model_heatmap.png")  # fmt: skip


def _grid_rows() -> list[dict]:
    """Our own results: 2 models x (2 solo steps + chain 1to02) x 3 epochs, one provider error."""
    rows = []
    for model, verdicts in (("apiflow/oracle", "CCC"), ("apiflow/sim:careless", "CIC")):
        for task in ("sample-w01-sub01", "sample-w01-sub02", "sample-w01-chain-1to02"):
            for epoch, verdict in enumerate(verdicts, 1):
                termination = "answered"
                if model.endswith("careless") and task.endswith("1to02") and epoch == 3:
                    verdict, termination = "", "provider_error"
                record = TrialRecord.model_validate(our_record(model, task, epoch, verdict, termination))
                rows.append(record_to_row(record))
    return rows


def test_report_on_the_raw_fixtures_ingested_on_the_fly(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", str(TRANSCRIPTS), "--out", str(out), "--bootstrap", "50"]) == 0
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["meta"]["trials"] == 42 and summary["meta"]["unscored"]["total"] == 1
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4
    assert "src='http" not in html and 'src="http' not in html  # self-contained
    assert (out / "pass_vs_length.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "leaderboard" in capsys.readouterr().out


def test_report_on_a_grid_folder_dedupes_and_keeps_harness_outcomes_apart(tmp_path):
    rows = _grid_rows()
    grid = tmp_path / "grid"
    (grid / "rows").mkdir(parents=True)
    for i, row in enumerate(rows):  # per-trial row files ...
        pq.write_table(pa.Table.from_pylist([row], schema=ROW_SCHEMA), grid / "rows" / f"{i}.parquet")
    (grid / "compacted").mkdir()  # ... and a compacted copy of the same trials
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), grid / "compacted" / "all.parquet")
    (grid / "manifest.json").write_text("{}")
    out = tmp_path / "rep"
    assert main(["report", str(grid), "--out", str(out), "--bootstrap", "20", "--json"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["meta"]["trials"] == 18
    assert summary["meta"]["unscored"] == {
        "total": 1,
        "no_verdict": 0,
        "harness": 1,
        "by_model": {"apiflow/sim:careless": 1},
    }
    chains = summary["pass_rates"]["chains"]["inclusive"]
    assert (chains["passes"], chains["trials"]) == (4, 5)  # the provider error is not in the denominator
    assert main(["report", str(grid), "--out", str(out), "--bootstrap", "0", "--count-unscored"]) == 0
    chains = json.loads((out / "summary.json").read_text())["pass_rates"]["chains"]["inclusive"]
    assert (chains["passes"], chains["trials"]) == (4, 6)
    assert summary["cost"]["source"] == "recorded" and summary["cost"]["total_usd"] == pytest.approx(0.18)


def test_dedupe_prefers_a_real_outcome_over_a_harness_failure():
    table = pa.table({"trial_id": ["a", "a", "b", "b", None], "harness": [True, False, True, True, None]})
    kept = dedupe_trials(table)
    assert kept["trial_id"].to_pylist() == ["a", "b", None]
    assert kept["harness"].to_pylist() == [False, True, None]


def test_report_on_our_trial_jsons(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for epoch in (1, 2):
        for task in ("sample-w01-sub01", "sample-w01-chain-1to02"):
            record = our_record("apiflow/oracle", task, epoch, "C")
            (runs / f"{task}-t{epoch}.json").write_text(json.dumps(record))
    (runs / "manifest.json").write_text(json.dumps({"grid": "demo"}))  # not a trial: skipped
    table = load_table([str(runs)])
    assert table.num_rows == 4 and table.schema == ROW_SCHEMA
    assert main(["report", str(runs), "--out", str(tmp_path / "rep"), "--bootstrap", "10"]) == 0


def test_report_on_an_ingested_table_and_model_filter(tmp_path):
    table = tmp_path / "fx.parquet"
    ingest([TRANSCRIPTS], table, workers=1)
    out = tmp_path / "rep"
    assert (
        main(["report", str(table), "--out", str(out), "--models", "gpt-5.5", "kimi-k3", "--bootstrap", "0"])
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["meta"]["models"] == ["gpt-5.5", "kimi-k3"] and summary["meta"]["trials"] == 7


def test_same_inputs_same_summary():
    def run() -> str:
        table = select_rows(load_table([str(PUBLISHED)]), panel="board-update")
        return json.dumps(summarize(trials_from_table(table), ReportOptions(bootstrap=200, seed=3)))

    first = run()
    assert first == run()
    assert "NaN" not in first


@pytest.mark.parametrize(
    "extra",
    [
        ["/nonexistent/path"],
        [str(PUBLISHED), "--panel", "no-such-panel"],
        [str(PUBLISHED), "--models", "no-such-model"],
        [str(PUBLISHED), "--bootstrap", "-1"],
        [str(PUBLISHED), "--prices", "/nonexistent.yaml"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, extra):
    assert main(["report", *extra, "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("apiflow: error:") and "Traceback" not in err


def test_folder_without_trials_is_a_usage_error(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    assert main(["report", str(empty), "--out", str(tmp_path / "rep")]) == 2
    shutil.rmtree(empty)


def test_report_on_the_grid_result_store_layout(tmp_path):
    """rows/, failures/ (one per failed attempt) and compacted/ as the grid's ResultStore writes them."""
    from apiflow.results.store import ResultStore

    store = ResultStore(str(tmp_path / "grid"))

    def put(task: str, epoch: int, verdict: str, termination: str = "answered", run: str = "run-1") -> None:
        data = our_record("apiflow/sim:x", task, epoch, verdict, termination)
        data["provenance"]["run_id"] = run
        record = TrialRecord.model_validate(data)
        store.put_trial(record, record_to_row(record))

    put("v1-w01-sub01", 1, "", "provider_error", run="run-1")  # failed twice, then passed on resume
    put("v1-w01-sub01", 1, "", "provider_error", run="run-2")
    put("v1-w01-sub01", 1, "C", run="run-3")
    put("v1-w01-sub01", 2, "I")
    put("v1-w02-sub01", 1, "", "harness_error")  # never got past the harness
    store.compact()
    out = tmp_path / "rep"
    assert main(["report", str(tmp_path / "grid"), "--out", str(out), "--bootstrap", "0"]) == 0
    meta = json.loads((out / "summary.json").read_text())["meta"]
    assert meta["trials"] == 3 and meta["counted_trials"] == 2
    assert meta["unscored"]["harness"] == 1


def test_report_when_every_trial_is_a_harness_outcome(tmp_path):
    rows = [record_to_row(TrialRecord.model_validate(our_record("m", "v1-w01-chain-1to02", e, "", "provider_error")))
            for e in (1, 2)]  # fmt: skip
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), path)
    assert main(["report", str(path), "--out", str(tmp_path / "rep"), "--bootstrap", "5"]) == 0
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())
    assert summary["meta"]["counted_trials"] == 0 and summary["pass_rates"]["all"]["rate"] is None
