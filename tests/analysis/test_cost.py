"""Cost from tokens x a pinned price table, and the Pareto frontier, on hand-computable data."""

import numpy as np
import pytest

from apiflow.analysis.cost import pareto_frontier, token_kinds, trial_costs
from apiflow.results.prices import PriceEntry, PriceTable, cost_usd, load_price_table

from ._helpers import make_trials, trial


def _table() -> PriceTable:
    entries = {
        "claude-x": PriceEntry(input=1.0, output=10.0, cache_read=0.1, cache_write=2.0, reasoning=10.0),
        "apiflow/*": PriceEntry(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0, reasoning=0.0),
    }
    return PriceTable(version="t", hash="0" * 64, path="-", entries=entries)


def test_published_tokens_are_priced_by_kind():
    row = trial("claude-x", "v56-w01-sub01", "C", tokens_input=1_000, tokens_output=2_000, tokens_cache=10_000,
                tokens_total=14_000)  # fmt: skip
    t = make_trials([row])
    kinds = {k: float(v[0]) for k, v in token_kinds(t).items()}
    assert kinds == {"input": 1000, "output": 2000, "cache_read": 10000, "cache_write": 1000, "reasoning": 0}
    costs = trial_costs(t, _table(), reprice=True)
    # (1000 x 1 + 2000 x 10 + 10000 x 0.1 + 1000 x 2) / 1e6
    assert costs.usd[0] == pytest.approx(0.024)
    assert costs.source == "price table t" and costs.unpriced_models == []


def test_vectorised_cost_equals_the_results_cost_function():
    table = load_price_table()
    row = trial("claude-opus-4-8", "v56-w01-sub01", "C", tokens_input=26, tokens_output=2829, tokens_cache=85_791,
                tokens_total=94_138)  # fmt: skip
    t = make_trials([row])
    kinds = token_kinds(t)

    class Counts:
        input, output, cache_read = 26, 2829, 85_791
        cache_write, reasoning = int(kinds["cache_write"][0]), 0

    expected = cost_usd(Counts(), table.price("claude-opus-4-8"))
    assert trial_costs(t, table, reprice=True).usd[0] == pytest.approx(expected)


def test_recorded_cost_wins_unless_repriced_and_model_api_is_a_price_key():
    rows = [
        trial("apiflow-sim-x", "v1-w01-sub01", "C", model_api="apiflow/sim:x", cost_usd=None, tokens_input=5),
        trial("claude-x", "v1-w01-sub01", "C", cost_usd=0.5, tokens_input=1_000_000),
        trial("mystery", "v1-w01-sub01", "I", tokens_input=10),
    ]
    t = make_trials(rows)
    kept = trial_costs(t, _table(), reprice=False)
    by_model = {t.models[m]: kept.usd[i] for i, m in enumerate(t.model)}
    assert by_model["apiflow-sim-x"] == 0.0  # priced through its route apiflow/sim:x -> apiflow/*
    assert by_model["claude-x"] == 0.5  # recorded at run time
    assert np.isnan(by_model["mystery"]) and kept.unpriced_models == ["mystery"]
    repriced = trial_costs(t, _table(), reprice=True)
    assert repriced.usd[list(t.model).index(t.models.index("claude-x"))] == pytest.approx(1.0)


def test_pareto_frontier_by_hand():
    cost = np.array([1.0, 2.0, 2.0, 3.0, np.nan, 0.5])
    rate = np.array([0.5, 0.7, 0.6, 0.7, 0.9, 0.5])
    # 0 is beaten by 5 (cheaper, same rate); 2 by 1; 3 by 1; 4 has no cost
    assert pareto_frontier(cost, rate) == [5, 1]
