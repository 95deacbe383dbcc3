"""The adaptive sweep stops what is settled, samples what is not, and never passes its cap."""

from __future__ import annotations

import numpy as np
import pytest

from apiflow.analysis.adaptive import (
    Question,
    assess,
    next_wave,
    parse_question,
    paths,
    simulate,
    unit_order,
)

N = 1200


def outcomes(rates: list[float], seed: int = 0, shared: float = 0.0) -> np.ndarray:
    """(M, N) pass/fail per unit; ``shared`` of the units are hard for every model (task effects)."""
    rng = np.random.default_rng(seed)
    hard = rng.random(N) < shared
    draws = rng.random((len(rates), N))
    return np.where(hard, 0.0, (draws < np.array(rates)[:, None] / (1 - shared)).astype(float))


def test_a_separated_pair_stops_early_and_a_close_one_keeps_sampling():
    x = outcomes([0.9, 0.5, 0.9])
    costs = np.ones_like(x)
    models = ["a", "far", "close"]
    far = simulate(Question("better", pair=("a", "far")), models, x, costs, step=50)
    close = simulate(Question("better", pair=("a", "close")), models, x, costs, step=50)
    assert far.stop == "answered" and far.final.assessment.verdict == "yes"
    assert far.final.counts[0] <= 300 and far.final.counts[2] == 0  # only the pair ran
    assert close.final.counts[0] > 3 * far.final.counts[0]
    assert close.final.counts[1] == 0


def test_rank_stops_the_model_that_is_settled():
    x = outcomes([0.95, 0.55, 0.56, 0.2], seed=1, shared=0.05)
    sweep = simulate(Question("rank", places=0), ["top", "b", "c", "bottom"], x, np.ones_like(x), step=60)
    counts = sweep.final.counts
    assert counts[0] < counts[1] and counts[3] < counts[1]  # the clear ones stopped
    assert counts[1] == counts[2]  # the near tie is sampled together, pair by pair
    waves = np.array([w.counts for w in sweep.waves])
    assert (np.diff(waves, axis=0) >= 0).all()  # a model's trials are always a prefix of the order
    first = sweep.waves[0].assessment
    assert not first.answered and first.open_models[1:3].all()
    final = sweep.final.assessment
    assert sweep.stop == "answered" and (final.rank_low == final.rank_high).all()
    assert final.rank_low[[0, 3]].tolist() == [1, 4]


def test_the_cap_holds():
    x = outcomes([0.9, 0.88, 0.86, 0.84], seed=2)
    costs = np.random.default_rng(2).uniform(0.5, 2.0, x.shape)
    cap = 0.3 * costs.sum()
    sweep = simulate(Question("rank", places=0), list("abcd"), x, costs, step=100, cap=cap)
    assert sweep.stop == "cap"
    assert sweep.final.spent <= cap
    spent = sum(costs[m, : sweep.final.counts[m]].sum() for m in range(4))
    assert spent == pytest.approx(sweep.final.spent)
    assert sweep.final.spent > 0.25 * costs.sum()  # it spent up to the cap, not far below it


def test_a_cap_below_the_first_wave_runs_nothing():
    x = outcomes([0.9, 0.5])
    sweep = simulate(Question("rank"), ["a", "b"], x, np.ones_like(x), step=100, cap=0.5)
    assert sweep.stop == "cap" and sweep.final.counts.sum() == 0 and sweep.final.spent == 0


def test_width_question_and_exhaustion():
    x = outcomes([0.9, 0.6], seed=3)
    wide = simulate(Question("width", width=0.05), ["a", "b"], x, np.ones_like(x), step=50)
    assert wide.stop == "answered"
    assert all(r.half_width <= 0.05 for r in wide.final.assessment.rates)
    assert wide.final.counts[0] < wide.final.counts[1]  # the rate near 1 has less variance
    exact = simulate(Question("width", width=1e-6), ["a", "b"], x, np.ones_like(x), step=500)
    assert (exact.final.counts == N).all()
    assert [r.estimate for r in exact.final.assessment.rates] == pytest.approx(x.mean(1))


def test_paths_read_at_a_count_equal_paths_of_the_prefix():
    """A path's column k uses the first k + 1 units only, so the bench may compute it once."""
    x = outcomes([0.8, 0.7, 0.75], seed=4)
    whole, prefix = paths(x, N, 0.01, 0.005), paths(x[:, :300], N, 0.01, 0.005)
    counts = np.array([300, 200, 250])
    a, b = (
        assess(Question("rank"), list("abc"), whole, counts),
        assess(Question("rank"), list("abc"), prefix, counts),
    )
    assert [(r.low, r.high) for r in a.rates] == [(r.low, r.high) for r in b.rates]
    assert (a.separated == b.separated).all()


def test_next_wave_is_even_and_bounded_by_the_plan():
    costs = np.ones((3, 10))
    wave = next_wave(np.array([True, True, False]), np.array([8, 2, 0]), 10, 5, costs, 0.0, None)
    assert wave.tolist() == [2, 5, 0]
    cut = next_wave(np.array([True, True, True]), np.array([0, 0, 0]), 10, 5, costs, 0.0, 7.0)
    assert cut.tolist() == [2, 2, 2]


def test_order_and_questions():
    order = unit_order(50, 7)
    assert sorted(order.tolist()) == list(range(50)) and (order == unit_order(50, 7)).all()
    assert not (order == unit_order(50, 8)).all()
    assert parse_question("rank:2").places == 2
    assert parse_question("width:0.02").width == 0.02
    better = parse_question("better:a,b,0.03", level=0.95)
    assert better.pair == ("a", "b") and better.margin == 0.03 and better.level == 0.95
    assert Question("rank").alphas(19) == pytest.approx((0.1 / 19, 0.1 / 171))
    assert Question("rank", joint=False).alphas(19) == pytest.approx((0.1, 0.1))
    for bad in ("better:a", "nope:1"):
        with pytest.raises(ValueError):
            parse_question(bad)
    with pytest.raises(ValueError):
        Question("better", pair=("a", "a"))
