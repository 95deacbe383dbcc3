"""Each statistic on small data whose answers are computed by hand."""

from math import comb

import numpy as np
import pytest

from apiflow.analysis import reach
from apiflow.analysis.bootstrap import WorldResamples, ci, resample_worlds
from apiflow.analysis.failures import composition, failure_classes
from apiflow.analysis.null_model import null_model, solo_step_rates, world_sums
from apiflow.analysis.rates import model_rates, rate_of
from apiflow.analysis.screen import screen_cells
from apiflow.analysis.separation import spread
from apiflow.analysis.variation import variance_split

from ._helpers import make_trials, trial


def test_pass_rates_leave_unscored_out_by_default(tiny_rows):
    t = make_trials(tiny_rows)
    solo = rate_of(t, t.solo)
    assert (solo.passes, solo.trials, solo.rate) == (23, 32, 23 / 32)
    chains = rate_of(t, t.chain)
    assert (chains.passes, chains.trials, chains.unscored) == (6, 15, 1)
    m1, m2 = model_rates(t, t.chain)
    assert (m1.passes, m1.trials) == (4, 7) and (m2.passes, m2.trials) == (2, 8)


def test_count_unscored_keeps_them_in_denominators_never_as_passes(tiny_rows):
    t = make_trials(tiny_rows, count_unscored=True)
    chains = rate_of(t, t.chain)
    assert (chains.passes, chains.trials) == (6, 16)
    assert chains.rate == pytest.approx(0.375)


def test_harness_outcomes_are_unscored_even_with_a_verdict():
    t = make_trials([trial("m", "b-w01-sub01", "C", harness=True), trial("m", "b-w01-sub01", "C")])
    assert list(t.passed) == [False, True]
    assert rate_of(t, t.solo).trials == 1
    assert rate_of(t, t.solo).unscored == 1


def test_screen_flags_cells_without_any_pass():
    rows = [trial(m, "b-w01-chain-1to02", "I") for m in ("a", "b") for _ in range(3)]
    rows += [trial("a", "b-w01-chain-1to03", "C")] + [trial("b", "b-w01-chain-1to03", "I")] * 5
    rows += [trial("a", "b-w02-chain-1to02", "C")] * 4 + [trial("a", "b-w01-sub01", "I")] * 2
    t = make_trials(rows)
    s = screen_cells(t)
    assert s.flagged == ["b-w01-chain-1to02"]
    assert s.near_zero == [("b-w01-chain-1to03", 1)]
    assert (s.flagged_trials, s.chain_trials) == (6, 16)
    assert s.share == pytest.approx(6 / 16)
    assert int(s.clean(t).sum()) == len(rows) - 6  # solo trials are always clean


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_match_the_combinatorial_definitions(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            at = reach.pass_at_k(np.array([c]), np.array([n]), k)[0]
            hat = reach.pass_hat_k(np.array([c]), np.array([n]), k)[0]
            assert at == pytest.approx(1 - comb(n - c, k) / comb(n, k))
            assert hat == pytest.approx(comb(c, k) / comb(n, k))


def test_pass_at_k_by_hand_and_short_tasks():
    c, n = np.array([2, 0, 4, 3, 0]), np.array([5, 5, 4, 4, 0])
    assert reach.pass_at_k(c, n, 2)[0] == pytest.approx(0.7)  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert reach.pass_hat_k(c, n, 2)[0] == pytest.approx(0.1)  # C(2,2)/C(5,2)
    at5, hat5 = reach.pass_at_k(c, n, 5), reach.pass_hat_k(c, n, 5)
    assert list(at5[:4]) == [1.0, 0.0, 1.0, 1.0]  # n < k: any pass observed
    assert list(hat5[:4]) == [0.0, 0.0, 0.0, 0.0]  # n < k: not passed k times, even 4 of 4
    assert np.isnan(at5[4]) and np.isnan(hat5[4])  # untried task: no estimate


def test_best_of_and_all_of(tiny_rows):
    t = make_trials(tiny_rows)
    counts = reach.task_counts(t, np.ones(t.n, bool))
    assert counts.epochs == 4
    m1 = t.models.index("m1")
    best, every = reach.best_of(counts)[m1], reach.all_of(counts, 4)[m1]
    assert np.nansum(best) == 6 and np.nansum(every) == 3  # m1 w02 chain: 3 of 3 scored is not all-4-of-4
    sums, tasks = reach.world_sums(reach.all_of(counts, 4), counts.world_of_task, len(t.worlds))
    assert sums[:, m1].tolist() == [1.0, 2.0] and tasks[:, m1].tolist() == [3.0, 3.0]


def test_bootstrap_ratio_estimator_by_hand():
    resamples = WorldResamples(counts=np.array([[2.0, 0.0], [0.0, 2.0], [1.0, 1.0]]), seed=0)
    got = resamples.ratio(np.array([1.0, 3.0]), np.array([2.0, 4.0]))
    assert got.tolist() == pytest.approx([0.5, 0.75, 4 / 6])
    per_model = resamples.ratio(np.array([[1.0, 0.0], [3.0, 0.0]]), np.array([[2.0, 0.0], [4.0, 1.0]]))
    assert np.isnan(per_model[0, 1]) and per_model[1, 1] == 0.0  # a resample with no trial of a model


def test_resampling_is_seeded_and_draws_w_worlds():
    a, b, c = (
        resample_worlds(13, 500, seed=7),
        resample_worlds(13, 500, seed=7),
        resample_worlds(13, 500, seed=8),
    )
    assert np.array_equal(a.counts, b.counts) and not np.array_equal(a.counts, c.counts)
    assert (a.counts.sum(1) == 13).all()


def test_bootstrap_interval_of_identical_worlds_is_the_point_and_pairs_cancel():
    resamples = resample_worlds(4, 1000, seed=1)
    samples = resamples.ratio(np.full((4, 2), 3.0), np.full((4, 2), 4.0))
    assert ci(samples[:, 0]) == pytest.approx([0.75, 0.75])
    uneven = resamples.ratio(np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [4.0, 4.0]]), np.full((4, 2), 4.0))
    assert np.all(
        uneven[:, 0] - uneven[:, 1] == 0
    )  # same worlds for both models: paired difference is exactly 0
    low, high = ci(uneven[:, 0])
    assert low < 7 / 16 < high


def test_null_model_by_hand(tiny_rows):
    t = make_trials(tiny_rows)
    rates = solo_step_rates(t)
    m1, m2, w01, w02 = (
        t.models.index("m1"),
        t.models.index("m2"),
        t.worlds.index("w01"),
        t.worlds.index("w02"),
    )
    assert rates[m1, w01, 1:].tolist() == [1.0, 0.5] and rates[m2, w02, 1:].tolist() == [1.0, 0.75]
    model = null_model(t)
    chain = t.chain & t.counted
    sums = world_sums(t, model, chain)
    # m1 w01: 4 x 0.5; m1 w02: 3 scored x 1.0; m2 w01: 4 x 0; m2 w02: 4 x 0.75
    assert sums["predicted"].sum() == pytest.approx(8.0) and sums["trials"].sum() == 15
    assert sums["observed"].sum() == 6
    assert np.isnan(model.predicted[t.solo]).all()


def test_null_model_without_a_solo_step_has_no_prediction():
    t = make_trials([trial("m", "b-w01-sub01", "C"), trial("m", "b-w01-chain-1to02", "C")])
    model = null_model(t)
    assert np.isnan(model.predicted).all()
    assert world_sums(t, model, t.chain)["trials"].sum() == 0


def test_failure_composition():
    rows = [
        trial("m", "b-w01-sub01", "I", g1=False, g2=True),
        trial("m", "b-w01-sub01", "I", g1=True, g2=False),
        trial("m", "b-w01-sub01", "I", g1=True, g2=False),
        trial("m", "b-w01-sub01", "I", g1=False, g2=False),
        trial("m", "b-w01-sub01", "I", g1=True, g2=True, abstained="clarify"),
        trial("m", "b-w01-sub01", "I", g1=True, g2=False, abstained="report_blocked"),
        trial("m", "b-w01-sub01", "C"),
        trial("m", "b-w01-sub01", ""),
    ]
    t = make_trials(rows)
    assert list(failure_classes(t)) == [
        "state_only",
        "delivery_only",
        "delivery_only",
        "both",
        "abstained",
        "abstained",
        "",
        "",
    ]
    got = composition(t, np.ones(t.n, bool))
    assert got == {"failures": 6, "state_only": 1, "delivery_only": 2, "both": 1, "abstained": 2, "other": 0}


def test_spread_points_and_log_odds():
    out = spread(np.array([0.9, 0.5, 0.75]), np.array([100, 100, 100]))
    assert out["points"] == pytest.approx(40.0)
    assert out["log_odds"] == pytest.approx(np.log(9.0))  # logit(0.9) - logit(0.5)
    clipped = spread(np.array([1.0, 0.5]), np.array([10, 10]))
    assert clipped["log_odds"] == pytest.approx(np.log(0.95 / 0.05))  # 1.0 moved to 1 - 0.5/10


def test_variance_split_of_an_additive_table_has_no_residual():
    worlds = np.array([0.1, 0.3, 0.5])[:, None]
    models = np.array([0.0, 0.2])[None, :]
    out = variance_split(worlds + models)
    assert out["residual_share"] == pytest.approx(0.0, abs=1e-12)
    assert out["world_var"] == pytest.approx(400.0)  # means 20, 40, 60 points -> sample variance 400
    assert out["model_var"] == pytest.approx(200.0)  # means 30, 50 -> 200
    assert out["world_share"] + out["model_share"] == pytest.approx(1.0)
