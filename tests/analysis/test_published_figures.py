"""Acceptance: the report reproduces the paper's published figures on the original 19-model panel.

Conventions that reproduce them (docs/design/050-analysis-conventions.md): denominators are the
scored trials (the 19 unscored qwen3p7-plus trials are left out), rates are trial-pooled, the
short pairs enter with their 4 trials, and a cell is flagged when no model passes it.
"""

import pytest

from apiflow.analysis.summary import ReportOptions, summarize
from apiflow.analysis.table import load_table
from apiflow.analysis.trials import select_rows, trials_from_table
from apiflow.results.prices import load_price_table

from ._helpers import PUBLISHED


@pytest.fixture(scope="module")
def summary():
    # The statistics only (figures and files are tested in test_report.py); point estimates do
    # not depend on B, a few hundred resamples keep the intervals' presence checked.
    table = select_rows(load_table([str(PUBLISHED)]), panel="original-19")
    return summarize(
        trials_from_table(table), ReportOptions(bootstrap=300, seed=0, prices=load_price_table())
    )


def pct(x: float) -> float:
    return round(100 * x, 1)


def test_panel_and_unscored(summary):
    meta = summary["meta"]
    assert (meta["trials"], len(meta["models"]), meta["tasks"], len(meta["worlds"])) == (44_362, 19, 467, 13)
    assert meta["unscored"] == {"total": 19, "no_verdict": 19, "harness": 0, "by_model": {"qwen3p7-plus": 19}}


def test_solo_and_pooled_chains(summary):
    rates = summary["pass_rates"]
    assert pct(rates["solo"]["rate"]) == 92.9
    assert pct(rates["chains"]["inclusive"]["rate"]) == 77.0
    assert pct(rates["chains"]["clean"]["rate"]) == 83.7


def test_headline_length_20(summary):
    head = summary["headline"]
    assert head["length"] == 20
    assert pct(head["inclusive"]["rate"]) == 60.9
    assert pct(head["clean"]["rate"]) == 74.4
    assert (head["inclusive"]["worlds"], head["clean"]["worlds"]) == (11, 9)
    low, high = head["clean"]["ci90"]
    assert low < head["clean"]["rate"] < high


def test_cell_screen(summary):
    screen = summary["screen"]
    assert screen["n_flagged"] == 18
    assert (screen["flagged_trials"], screen["chain_trials"]) == (1_710, 21_455)
    assert pct(screen["flagged_share"]) == 8.0


def test_reach_and_reliability(summary):
    spread = summary["reach"]["spread"]
    assert (pct(spread["best_of"]["min"]), pct(spread["best_of"]["max"])) == (85.4, 92.3)
    assert (pct(spread["all_of"]["min"]), pct(spread["all_of"]["max"])) == (42.2, 86.1)
    assert set(summary["reach"]["tasks_per_model"].values()) == {467}
    # with 5 epochs, pass@5 and pass^5 are best-of-5 and all-5-of-5 on the full-trial tasks
    assert pct(spread["pass@5"]["max"]) == 92.3 and pct(spread["pass^5"]["max"]) == 86.1


def test_null_model_and_failures_on_clean_length_20(summary):
    null = summary["null_model"]["headline_clean"]
    assert (pct(null["observed"]), pct(null["predicted"])) == (74.4, 41.4)
    fail = summary["failures"]["headline_clean"]
    assert (fail["failures"], fail["delivery_only"]) == (219, 169)


def test_model_separation(summary):
    solo, head = summary["separation"]["solo"], summary["separation"]["headline_inclusive"]
    assert (round(solo["points"], 1), round(solo["log_odds"], 1)) == (19.8, 2.1)
    assert (round(head["points"], 1), round(head["log_odds"], 1)) == (29.1, 1.2)
