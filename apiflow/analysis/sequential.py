"""Anytime-valid confidence sequences for a sweep that samples a fixed plan in a random order.

The target is the value the *full* plan would give (a model's trial-pooled pass rate over every
planned (task, epoch) unit, or a pair's difference paired by task and epoch), and the randomness is
the order we draw: the units are taken in a seeded uniform random permutation. Draw i is then a
draw without replacement, whose mean given everything seen is the mean of what is left,
``mu_i = (N * mean - S_{i-1}) / (N - i + 1)``. That is the only fact the sequence uses: it assumes
nothing about how trials relate to each other, so trials of one world (which fail together) cannot
make it too narrow; the world structure is carried by the report's bootstrap (docs/design/051).

Construction: the predictable-plug-in empirical-Bernstein sequence for sampling without replacement
(Waudby-Smith & Ramdas 2020, "Confidence sequences for sampling without replacement"; the bound
is their 2023 JRSS-B Theorem 2 with the conditional mean above). For x in [0, 1], a predictable
bet lam_i in [0, 1) and any predictable guess g_i in [0, 1], Fan et al.'s inequality gives
``E[exp(lam (x - mu) - psi(lam) (x - g)^2) | past] <= exp(lam (g - mu)) (1 + lam (mu - g)) <= 1``,
with ``psi(lam) = -log(1 - lam) - lam``, so the product over draws is a nonnegative
supermartingale at the true mean and Ville's inequality bounds the chance it ever reaches 2/alpha
by alpha/2, per side. Solving for the mean gives a closed form, so a whole path costs a few cumsums
and holds at every sample size at once: any stopping rule, and the running intersection, keep it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MAX_BET = 0.5
"""Cap of each bet: bets must stay below 1; half keeps one unlucky draw from costing much width."""


@dataclass(frozen=True, slots=True)
class Interval:
    """A running-intersection interval after ``n`` draws of a population of ``population``."""

    low: float
    high: float
    estimate: float
    n: int
    population: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def excludes(self, value: float) -> bool:
        """True when ``value`` is outside the interval (a separation at the sequence's level)."""
        return value < self.low or value > self.high

    def as_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "estimate": self.estimate, "n": self.n,
                "population": self.population}  # fmt: skip


def _bets(x: np.ndarray, population: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Predictable bets and guesses along the last axis (each uses draws before it only).

    The bet is the plug-in one of Waudby-Smith & Ramdas, sqrt(2 log(2/alpha) / (var t log(1+t))),
    scaled up by sqrt(N / (N - t + 1)): without replacement a late draw says more about the mean
    (its weight in the bound is N / (N - t + 1)), so it is worth a larger bet.
    """
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mean = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    var = (0.25 + np.cumsum((x - mean) ** 2, axis=-1)) / (t + 1)
    shift = [(0, 0)] * (x.ndim - 1) + [(1, 0)]
    var_before = np.pad(var[..., :-1], shift, constant_values=0.25)
    guess = np.pad(mean[..., :-1], shift, constant_values=0.5)
    scale = np.sqrt(population / (population - t + 1))
    bet = np.sqrt(2 * math.log(2 / alpha) / (var_before * t * np.log1p(t))) * scale
    return np.minimum(bet, MAX_BET), guess


def mean_path(x: np.ndarray, population: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the population mean after each draw: (low, high), same shape as ``x``.

    Args:
        x: draws in [0, 1] in the order drawn, along the last axis (leading axes: independent
            sequences, e.g. models); at most ``population`` of them.
        population: N, the number of units the draws are taken from without replacement.
        alpha: miscoverage of the whole path (alpha / 2 per side).

    Returns:
        The running intersection of the sequence, also clipped to what the unseen units could
        still make of the mean. After all N draws the mean is known and both bounds equal it.
    """
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    if n > population:
        raise ValueError(f"{n} draws from a population of {population}")
    if n == 0:
        return np.zeros(x.shape), np.ones(x.shape)
    t = np.arange(1, n + 1, dtype=float)
    bet, guess = _bets(x, population, alpha)
    seen = np.cumsum(x, axis=-1)
    seen_before = seen - x
    weight = np.cumsum(bet * population / (population - t + 1), axis=-1)
    centre = np.cumsum(bet * (x + seen_before / (population - t + 1)), axis=-1) / weight
    penalty = np.cumsum((x - guess) ** 2 * (-np.log1p(-bet) - bet), axis=-1)
    half = (math.log(2 / alpha) + penalty) / weight
    low = np.maximum(centre - half, seen / population)
    high = np.minimum(centre + half, (seen + population - t) / population)
    low, high = np.maximum.accumulate(low, axis=-1), np.minimum.accumulate(high, axis=-1)
    if n == population:
        low[..., -1] = high[..., -1] = seen[..., -1] / population
    return low, high


def _interval(x: np.ndarray, population: int, alpha: float, low_value: float, span: float) -> Interval:
    n = int(x.shape[-1])
    if n == 0:
        return Interval(low_value, low_value + span, float("nan"), 0, population)
    low, high = mean_path(x, population, alpha)
    lo, hi = float(low[-1]), float(high[-1])
    if lo > hi:  # the intersection emptied: the truth was excluded at some point (chance <= alpha)
        lo = hi = float(np.mean(x))
    return Interval(low_value + span * lo, low_value + span * hi, low_value + span * float(np.mean(x)), n,
                    population)  # fmt: skip


def rate_interval(outcomes: np.ndarray, population: int, alpha: float) -> Interval:
    """The pass rate of the full plan, from its first ``len(outcomes)`` units (1 pass, 0 not)."""
    return _interval(np.asarray(outcomes, float), population, alpha, 0.0, 1.0)


def difference_interval(a: np.ndarray, b: np.ndarray, population: int, alpha: float) -> Interval:
    """Rate of A minus rate of B over the full plan, from the units both have run (paired).

    ``a`` and ``b`` are the two models' outcomes on the same units in the same order; only the
    common prefix counts. A difference in [-1, 1] is mapped to [0, 1] and back.
    """
    n = min(len(a), len(b))
    x = (np.asarray(a[:n], float) - np.asarray(b[:n], float) + 1.0) / 2.0
    return _interval(x, population, alpha, -1.0, 2.0)
