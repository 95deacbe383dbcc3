"""Harness/provider outcomes per model in the report, the > 1 % unscored flag, and ``--count-unscored``."""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from apiflow.analysis.outcomes import FLAG_SHARE, kind_of, outcome_table
from apiflow.cli import main
from apiflow.results.record import TrialRecord
from apiflow.results.rows import ROW_SCHEMA, record_to_row

from ._helpers import make_trials, our_record, trial

RATE_LIMIT = "LiteLLMProviderError: RateLimitError: litellm.RateLimitError: RateLimitError: OpenAIException - slow down"
SERVER = "LiteLLMProviderError: InternalServerError: litellm.InternalServerError: OpenAIException - oops"


@pytest.mark.parametrize(
    ("text", "kind"),
    [(RATE_LIMIT, "RateLimitError"), (SERVER, "InternalServerError"),
     ("BudgetReached: budget reached: $5.00 spent", "BudgetReached"),
     ("LiteLLMHarnessFault: ValueError: could not parse", "ValueError"),
     ("KeyError: 'x'", "KeyError"), ("TimeoutError: ", "TimeoutError"),
     ("litellm.APIConnectionError: refused", "APIConnectionError"),
     ("something odd happened", "unknown"), ("", "unknown"), (None, "unknown")],
)  # fmt: skip
def test_kind_is_the_first_fault_class_that_is_not_our_wrapper(text, kind):
    assert kind_of(text) == kind


def _rows(model: str, n: int, faults: list[tuple[str, str]], no_verdict: int = 0) -> list[dict]:
    """``n`` trials of ``model``: the faults (termination, harness_error), trials without verdict, then passes."""
    rows = [
        trial(model, f"b-w01-sub{i % 3 + 1:02d}", "", harness=True, termination=how, harness_error=text, epoch=i)
        for i, (how, text) in enumerate(faults)
    ]
    rows += [trial(model, "b-w01-sub01", "", epoch=100 + i) for i in range(no_verdict)]
    rows += [trial(model, "b-w02-sub01", "C", termination="answered", epoch=200 + i) for i in range(n - len(rows))]
    return rows


def test_shares_by_termination_and_kind_and_the_strict_one_percent_flag():
    rows = _rows("two-in-100", 100, [("provider_error", RATE_LIMIT), ("harness_error", "KeyError: 'x'")])
    rows += _rows("one-in-100", 100, [("provider_error", SERVER)])
    rows += _rows("one-in-99", 99, [], no_verdict=1)
    rows += _rows("clean", 50, [])
    out = outcome_table(make_trials(rows))
    assert FLAG_SHARE == 0.01 and out["flagged"] == ["one-in-99", "two-in-100"]
    two = out["models"]["two-in-100"]
    assert (two["trials"], two["unscored"], two["unscored_share"], two["flagged"]) == (100, 2, 0.02, True)
    assert two["by_termination"] == {
        "provider_error": {"count": 1, "share": 0.01},
        "harness_error": {"count": 1, "share": 0.01},
        "no_verdict": {"count": 0, "share": 0.0},
    }
    assert two["by_kind"] == {"KeyError": {"count": 1, "share": 0.01}, "RateLimitError": {"count": 1, "share": 0.01}}
    assert out["models"]["one-in-100"]["flagged"] is False  # exactly 1 %: not more than 1 %
    assert out["models"]["one-in-99"]["by_kind"] == {"no verdict": {"count": 1, "share": pytest.approx(1 / 99)}}
    assert out["models"]["clean"] == {
        "trials": 50, "unscored": 0, "unscored_share": 0.0, "flagged": False,
        "passes": 50, "scored": 50, "pass_rate_scored": 1.0, "pass_rate_unscored_as_fail": 1.0,
        "by_termination": {t: {"count": 0, "share": 0.0} for t in ("provider_error", "harness_error", "no_verdict")},
        "by_kind": {},
    }  # fmt: skip


def test_the_flag_does_not_depend_on_the_denominator_convention():
    rows = _rows("m", 40, [("provider_error", SERVER)])
    scored, counted = outcome_table(make_trials(rows)), outcome_table(make_trials(rows, count_unscored=True))
    assert scored["models"] == counted["models"] and scored["flagged"] == ["m"]
    assert (scored["convention"], counted["convention"]) == ("scored_only", "count_unscored")


def _grid(tmp_path):
    """A results file: 'flaky' has 2 provider errors in 12 trials (16.7 %), 'steady' none."""
    rows = []
    for model, faults in (("flaky", {2: RATE_LIMIT, 5: SERVER}), ("steady", {})):
        for epoch in range(1, 5):
            for t, task in enumerate(("sample-w01-sub01", "sample-w01-sub02", "sample-w01-chain-1to02")):
                slot = (epoch - 1) * 3 + t
                verdict = "I" if (model == "flaky" and slot % 4 == 0) else "C"
                data = our_record(model, task, epoch, "" if slot in faults else verdict,
                                  "provider_error" if slot in faults else "answered",
                                  cost=0.01 if model == "flaky" else 0.03)  # fmt: skip
                data["apiflow"]["harness_error"] = faults.get(slot)
                rows.append(record_to_row(TrialRecord.model_validate(data)))
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), path)
    return path


def test_report_shows_the_outcome_table_and_flags_the_model_everywhere(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", str(_grid(tmp_path)), "--out", str(out), "--bootstrap", "0"]) == 0
    terminal = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    flaky = summary["outcomes"]["models"]["flaky"]
    assert summary["outcomes"]["flagged"] == ["flaky"] and flaky["unscored"] == 2
    assert flaky["by_kind"] == {"InternalServerError": {"count": 1, "share": 1 / 12},
                                "RateLimitError": {"count": 1, "share": 1 / 12}}  # fmt: skip
    board = (out / "leaderboard.md").read_text()
    flaky_row = next(line for line in board.splitlines() if line.startswith("| ") and "| flaky |" in line)
    steady_row = next(line for line in board.splitlines() if line.startswith("| ") and "| steady |" in line)
    assert flaky_row.endswith("| 2 (16.7%) ⚑ |") and steady_row.endswith("| 0 |")
    assert "⚑ More than 1% of its trials unscored: flaky (2 of 12, 16.7%)" in board
    assert "## Harness and provider outcomes" in board
    assert "| flaky | 12 | 2 (16.7%) | 2 (16.7%) | 0 | 0 | InternalServerError 1 (8.3%), RateLimitError 1 (8.3%) | ⚑ |" in board
    html = (out / "report.html").read_text()
    assert "<h2>Harness and provider outcomes</h2>" in html and "<td>2 (16.7%) ⚑</td>" in html
    assert "⚑ more than 1% of trials unscored: flaky 2/12 (16.7%)" in terminal


def test_count_unscored_keeps_faults_in_the_denominator_and_the_same_flag(tmp_path):
    path = _grid(tmp_path)
    rates = {}
    for flags in ([], ["--count-unscored"]):
        out = tmp_path / ("rep" + "".join(flags))
        assert main(["report", str(path), "--out", str(out), "--bootstrap", "0", *flags]) == 0
        summary = json.loads((out / "summary.json").read_text())
        flaky = next(m for m in summary["pass_rates"]["all"]["per_model"] if m["model"] == "flaky")
        rates[bool(flags)] = (flaky["passes"], flaky["trials"], summary["outcomes"]["flagged"])
        assert summary["meta"]["convention"] == ("count_unscored" if flags else "scored_only")
        assert ("as failures (--count-unscored)" in (out / "leaderboard.md").read_text()) is bool(flags)
    assert rates[False] == (7, 10, ["flaky"]) and rates[True] == (7, 12, ["flaky"])


def test_both_pass_rates_per_model_whatever_the_convention():
    """A model that ends its failures as unscored trials tops the scored-only rate, not the other one."""
    honest = [trial("honest", "b-w01-sub01", "C", epoch=i) for i in range(7)]
    honest += [trial("honest", "b-w01-sub01", "I", epoch=10 + i) for i in range(3)]
    hider = [trial("hider", "b-w01-sub01", "C", epoch=i) for i in range(7)]
    hider += [trial("hider", "b-w01-sub01", "", harness=True, termination="harness_error",
                    harness_error="KeyError: 'x'", epoch=10 + i) for i in range(3)]  # fmt: skip
    for count_unscored in (False, True):
        out = outcome_table(make_trials(honest + hider, count_unscored=count_unscored))["models"]
        assert (out["hider"]["pass_rate_scored"], out["honest"]["pass_rate_scored"]) == (1.0, 0.7)
        assert out["hider"]["pass_rate_unscored_as_fail"] == out["honest"]["pass_rate_unscored_as_fail"] == 0.7
        assert (out["hider"]["passes"], out["hider"]["scored"], out["hider"]["trials"]) == (7, 7, 10)
    nothing = outcome_table(make_trials([trial("down", "b-w01-sub01", "", harness=True)]))["models"]["down"]
    assert (nothing["pass_rate_scored"], nothing["pass_rate_unscored_as_fail"]) == (None, 0.0)


@pytest.mark.parametrize("flags", [[], ["--count-unscored"]])
def test_the_leaderboard_shows_both_pass_rates_beside_the_unscored_count(tmp_path, capsys, flags):
    out = tmp_path / "rep"
    assert main(["report", str(_grid(tmp_path)), "--out", str(out), "--bootstrap", "0", *flags]) == 0
    terminal = capsys.readouterr().out
    flaky = json.loads((out / "summary.json").read_text())["outcomes"]["models"]["flaky"]
    assert (flaky["pass_rate_scored"], flaky["pass_rate_unscored_as_fail"]) == (0.7, 7 / 12)
    board = (out / "leaderboard.md").read_text()
    header = next(line for line in board.splitlines() if line.startswith("| # | model |"))
    assert header.endswith("| USD/trial | pass (scored) | pass (unscored = fail) | unscored |")
    flaky_row = next(line for line in board.splitlines() if line.startswith("| ") and "| flaky |" in line)
    steady_row = next(line for line in board.splitlines() if line.startswith("| ") and "| steady |" in line)
    assert flaky_row.endswith("| 70.0% | 58.3% | 2 (16.7%) ⚑ |") and steady_row.endswith("| 100.0% | 100.0% | 0 |")
    html = (out / "report.html").read_text()
    assert "<th>pass (unscored = fail)</th>" in html and "<td>70.0%</td><td>58.3%</td><td>2 (16.7%) ⚑</td>" in html
    assert "scored only" in terminal and "unscored=fail" in terminal
    assert re.search(r"│ flaky .*│\s+70\.0% │\s+58\.3% │$", terminal, re.MULTILINE)
