"""The confidence sequences hold under optional stopping, also when trials cluster by world."""

from __future__ import annotations

import numpy as np
import pytest

from apiflow.analysis.sequential import difference_interval, mean_path, rate_interval

ALPHA = 0.10
RUNS = 400


def clustered_population(rng: np.random.Generator, worlds: int = 12, per_world: int = 50) -> np.ndarray:
    """Pass/fail of every planned unit: a world's units share its rate (worlds carry most variance)."""
    rate = rng.beta(0.6, 0.15, worlds)  # many near-1 worlds, a few bad ones: pass rates ~ 0.8
    return (rng.random((worlds, per_world)) < rate[:, None]).astype(float).ravel()


def sweeps(rng: np.random.Generator, population: np.ndarray, runs: int) -> np.ndarray:
    """``runs`` random orders of the same population (the sweep's randomness)."""
    return np.stack([population[rng.permutation(len(population))] for _ in range(runs)])


def excluded_ever(low: np.ndarray, high: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per run: did the running interval exclude the truth at any sample size (any stopping rule)?"""
    truth = truth[:, None]
    return ((low > truth + 1e-12) | (high < truth - 1e-12)).any(axis=1)


def test_rate_sequence_covers_under_any_stopping_with_world_clustering():
    rng = np.random.default_rng(28)
    misses = 0
    for _ in range(4):  # four clustered populations, RUNS orders each
        population = clustered_population(rng)
        x = sweeps(rng, population, RUNS)
        low, high = mean_path(x, len(population), ALPHA)
        misses += excluded_ever(low, high, np.full(RUNS, population.mean())).sum()
    assert misses / (4 * RUNS) <= ALPHA


def test_peeking_at_a_fixed_n_interval_does_not_cover():
    """The check has teeth: a normal 90 % interval read after every draw from the 30th on misses far
    more than 10 % of the time (peeking is optional stopping)."""
    rng = np.random.default_rng(7)
    population = clustered_population(rng)
    n = len(population)
    x = sweeps(rng, population, RUNS)
    t = np.arange(1, n + 1)
    mean = np.cumsum(x, axis=1) / t
    half = 1.645 * np.sqrt(mean * (1 - mean) / t * (1 - (t - 1) / n)) + 1e-12
    low, high = (mean - half)[:, 29:], (mean + half)[:, 29:]
    assert excluded_ever(low, high, np.full(RUNS, population.mean())).mean() > 2 * ALPHA


def test_even_all_or_nothing_worlds_cannot_break_it():
    """Worlds that pass or fail as one block: validity comes from the random order, not independence."""
    rng = np.random.default_rng(3)
    population = np.repeat((rng.random(12) < 0.7).astype(float), 50)
    x = sweeps(rng, population, RUNS)
    low, high = mean_path(x, len(population), ALPHA)
    assert excluded_ever(low, high, np.full(RUNS, population.mean())).mean() <= ALPHA


def test_paired_difference_covers():
    rng = np.random.default_rng(11)
    worlds, per_world = 12, 50
    shared = rng.beta(0.6, 0.15, worlds)  # both models find the same worlds hard
    a = (rng.random((worlds, per_world)) < shared[:, None]).astype(float).ravel()
    b = np.where(rng.random(a.shape) < 0.1, 1 - a, a)  # B disagrees with A on 10 % of units
    truth = a.mean() - b.mean()
    misses = 0
    for _ in range(RUNS):
        order = rng.permutation(len(a))
        d = (a[order] - b[order] + 1) / 2
        low, high = mean_path(d, len(a), ALPHA)
        misses += bool(((2 * low - 1 > truth + 1e-12) | (2 * high - 1 < truth - 1e-12)).any())
    assert misses / RUNS <= ALPHA


def test_narrows_monotonically_to_the_exact_mean():
    rng = np.random.default_rng(1)
    population = clustered_population(rng)
    x = population[rng.permutation(len(population))]
    low, high = mean_path(x, len(population), ALPHA)
    assert (np.diff(low) >= 0).all() and (np.diff(high) <= 0).all()
    assert (low <= high).all()
    assert low[-1] == high[-1] == pytest.approx(population.mean())
    assert high[len(x) // 2] - low[len(x) // 2] < 0.5 * (high[20] - low[20])


def test_bounds_respect_what_the_unseen_units_can_do():
    x = np.ones(90)  # 90 passes of 100 units: the mean is at least 0.9 whatever the sequence says
    low, high = mean_path(x, 100, ALPHA)
    assert low[-1] >= 0.9 and high[-1] == 1.0


def test_intervals_and_edges():
    empty = rate_interval(np.array([]), 10, ALPHA)
    assert (empty.low, empty.high, empty.n) == (0.0, 1.0, 0)
    whole = rate_interval(np.array([1, 0, 1, 1.0]), 4, ALPHA)
    assert whole.low == whole.high == whole.estimate == 0.75
    diff = difference_interval(np.array([1, 1, 0, 1.0]), np.array([0, 1, 0]), 3, ALPHA)
    assert diff.n == 3 and diff.low == diff.high == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        mean_path(np.ones(5), 4, ALPHA)
