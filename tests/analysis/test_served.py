"""The report flags a cell whose trials were served by different model ids or fingerprints (issue 25 §7)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from apiflow.analysis.served import served_cells
from apiflow.cli import main
from apiflow.results.record import TrialRecord
from apiflow.results.rows import ROW_SCHEMA, record_to_row

from ._helpers import make_trials, our_record

SOLO, CHAIN = "sample-w01-sub01", "sample-w01-chain-1to02"


def _row(model: str, task: str, epoch: int, served: list[list[str]] | None) -> dict:
    """A row flattened from a record as a provider trial writes it: ``apiflow.served`` per call."""
    data = our_record(model, task, epoch, "C")
    if served is not None:
        data["apiflow"]["served"] = served
        data["apiflow"]["model_calls"] = len(served)
    return record_to_row(TrialRecord.model_validate(data))


def _calls(model: str, fingerprint: str, n: int = 2) -> list[list[str]]:
    return [[model, fingerprint, f"chatcmpl-{i}"] for i in range(n)]


def _rows() -> list[dict]:
    """'gpt' changed fingerprint between epochs on SOLO, kept one on CHAIN; 'oracle' is offline."""
    rows = [
        _row("gpt", SOLO, 1, _calls("gpt-5-mini-2025-08-07", "fp_a")),
        _row("gpt", SOLO, 2, _calls("gpt-5-mini-2025-08-07", "fp_b")),
        _row("gpt", CHAIN, 1, _calls("gpt-5-mini-2025-08-07", "fp_a")),
        _row("gpt", CHAIN, 2, _calls("gpt-5-mini-2025-08-07", "fp_a")),
    ]
    rows += [_row("oracle", task, epoch, None) for task in (SOLO, CHAIN) for epoch in (1, 2)]
    return rows


def test_the_row_keeps_each_trials_distinct_served_values_and_null_offline():
    row = _row("gpt", SOLO, 1, [["m", "fp_b", "r1"], ["m", "fp_a", "r2"], ["m", "fp_b", "r3"]])
    assert row["served"] == "m@fp_a, m@fp_b"  # distinct, sorted; request ids are per call, not kept
    assert (
        _row("claude", SOLO, 1, [["claude-x", "", "msg_1"]])["served"] == "claude-x"
    )  # no fingerprint named
    assert _row("oracle", SOLO, 1, None)["served"] is None
    table = pa.Table.from_pylist([row], schema=ROW_SCHEMA)
    assert table.column("served").to_pylist() == ["m@fp_a, m@fp_b"]


def test_a_cell_with_two_fingerprints_is_flagged_one_with_one_is_not_offline_never():
    out = served_cells(make_trials(_rows()))
    assert out["flagged"] == [{"model": "gpt", "task_id": SOLO, "trials": 2,
                               "served": {"gpt-5-mini-2025-08-07@fp_a": 1, "gpt-5-mini-2025-08-07@fp_b": 1}}]  # fmt: skip
    assert (out["trials"], out["cells"]) == (4, 2)
    assert out["models"] == {"gpt": {"gpt-5-mini-2025-08-07@fp_a": 3, "gpt-5-mini-2025-08-07@fp_b": 1}}


def test_a_switch_inside_one_trial_or_of_the_served_model_id_is_flagged():
    rows = [
        _row("gpt", SOLO, 1, [["gpt-5-mini", "fp_a", "r1"], ["gpt-5-mini", "fp_b", "r2"]]),
        _row("claude", SOLO, 1, [["claude-sonnet-4-5", "", "m1"]]),
        _row("claude", SOLO, 2, [["claude-sonnet-4-6", "", "m2"]]),
    ]
    flagged = {(c["model"], c["task_id"]): c["served"] for c in served_cells(make_trials(rows))["flagged"]}
    assert flagged == {("gpt", SOLO): {"gpt-5-mini@fp_a": 1, "gpt-5-mini@fp_b": 1},
                       ("claude", SOLO): {"claude-sonnet-4-5": 1, "claude-sonnet-4-6": 1}}  # fmt: skip


def test_rows_without_the_column_published_or_older_are_never_flagged():
    out = served_cells(make_trials([{"model": "m", "task_id": SOLO, "verdict": "C"}]))
    assert out == {"trials": 0, "cells": 0, "flagged": [], "models": {}}


def _report(tmp_path, rows: list[dict], capsys) -> tuple[dict, str, str, str]:
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), path)
    out = tmp_path / "rep"
    assert main(["report", str(path), "--out", str(out), "--bootstrap", "0"]) == 0
    terminal = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    return summary, (out / "leaderboard.md").read_text(), (out / "report.html").read_text(), terminal


def test_the_report_lists_the_flagged_cells_and_says_why(tmp_path, capsys):
    summary, board, html, terminal = _report(tmp_path, _rows(), capsys)
    assert [(c["model"], c["task_id"]) for c in summary["served"]["flagged"]] == [("gpt", SOLO)]
    assert "⚑ 1 of 2 cells were served by more than one model id or fingerprint (gpt)" in board
    assert "## Served models" in board and "silent model update" in board
    assert f"| gpt | {SOLO} | 2 | gpt-5-mini-2025-08-07@fp_a ×1, gpt-5-mini-2025-08-07@fp_b ×1 | ⚑ |" in board
    assert CHAIN not in board.split("## Served models")[1].split("##")[0]
    assert "<h2>Served models</h2>" in html
    assert "⚑ 1 of 2 cells were served by more than one model id or fingerprint (gpt)" in terminal


def test_a_report_of_offline_trials_has_no_served_section(tmp_path, capsys):
    rows = [r for r in _rows() if r["model"] == "oracle"]
    summary, board, _, terminal = _report(tmp_path, rows, capsys)
    assert (
        summary["served"]["flagged"] == [] and "Served models" not in board and "fingerprint" not in terminal
    )
