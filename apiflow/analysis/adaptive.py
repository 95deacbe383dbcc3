"""An adaptive sweep: waves of trials, each wave spent only on what the question still leaves open.

The plan is fixed before the first trial: every model runs the same (task, epoch) units, taken in
one seeded uniform random order (``unit_order``); a model's stored trials are always the first
``counts[m]`` units of that order. Stopping only decides how far down the order each model goes,
so the confidence sequences (``apiflow.analysis.sequential``) stay valid for the full plan and a
pair is compared on the units both models ran (paired by task and epoch).

Everything here is a pure function of the order, the outcomes revealed so far and their prices, so
the planner runs the same way over a stored outcome table (``simulate``, the offline bench) as it
will behind the grid's driver. The question is one of (docs/design/051):

* ``rank``: every model's rank to +-``places`` at ``level``, jointly (Bonferroni over the pairs);
* ``better``: is model A's pass rate above B's by more than ``margin``, at ``level``;
* ``width``: every model's pass rate to +-``width``, jointly (Bonferroni over the models);

``joint=False`` holds each statement at ``level`` on its own instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from apiflow.analysis.sequential import Interval, mean_path

Stop = Literal["answered", "cap", "exhausted", ""]


@dataclass(frozen=True)
class Question:
    """What the sweep must settle, and at what level (see the module docstring)."""

    kind: Literal["rank", "better", "width"]
    level: float = 0.90
    places: int = 1
    pair: tuple[str, str] = ("", "")
    margin: float = 0.0
    width: float = 0.02
    joint: bool = True
    """False: each statement (a pair's order, a model's rate) at ``level`` on its own, as the
    report's per-pair intervals are; the answer as a whole then holds less often than ``level``."""

    def __post_init__(self) -> None:
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1), not {self.level}")
        if self.kind == "rank" and self.places < 0:
            raise ValueError("places must be >= 0")
        if self.kind == "width" and self.width <= 0:
            raise ValueError("width must be > 0")
        if self.kind == "better" and (not all(self.pair) or self.pair[0] == self.pair[1]):
            raise ValueError("a 'better' question names two different models")

    def alphas(self, n_models: int) -> tuple[float, float]:
        """Miscoverage of each model's and each pair's sequence: the question's family shares alpha."""
        alpha = 1.0 - self.level
        if not self.joint or self.kind == "better":
            return alpha, alpha
        return alpha / max(n_models, 1), alpha / max(n_models * (n_models - 1) // 2, 1)

    def involved(self, models: list[str]) -> np.ndarray:
        """The models the question is about: the two of a ``better`` question, else all."""
        if self.kind != "better":
            return np.ones(len(models), dtype=bool)
        return np.isin(np.array(models, dtype=object), np.array(self.pair, dtype=object))

    def describe(self) -> str:
        pct = f"{self.level:.0%}" + ("" if self.joint or self.kind == "better" else " each")
        if self.kind == "rank":
            return f"rank every model to +-{self.places} place(s) at {pct}"
        if self.kind == "better":
            return f"is {self.pair[0]} better than {self.pair[1]} by {100 * self.margin:g} points, at {pct}"
        return f"every model's pass rate to +-{100 * self.width:g} points at {pct}"


def parse_question(text: str, level: float = 0.90, joint: bool = True) -> Question:
    """``rank:1``, ``better:A,B,0.03`` or ``width:0.02`` (what a grid file or flag will say)."""
    kind, _, rest = text.partition(":")
    if kind == "rank":
        return Question("rank", level, places=int(rest or 1), joint=joint)
    if kind == "width":
        return Question("width", level, width=float(rest), joint=joint)
    if kind == "better":
        parts = rest.split(",")
        if len(parts) not in (2, 3):
            raise ValueError(f"better:A,B[,margin], not {text!r}")
        margin = float(parts[2]) if len(parts) == 3 else 0.0
        return Question("better", level, pair=(parts[0], parts[1]), margin=margin)
    raise ValueError(f"unknown question {text!r}: rank:K, better:A,B[,margin] or width:W")


def unit_order(n_units: int, seed: int) -> np.ndarray:
    """The order every model runs the plan's units in: a seeded uniform random permutation."""
    return np.random.default_rng(seed).permutation(n_units)


@dataclass(frozen=True)
class Paths:
    """Bounds of every model's rate and every pair's difference after each unit of the order.

    Column k depends on the first k + 1 units only, so paths computed over more units than a model
    has run are read at its own count (``assess``): the offline bench computes them once per order.
    """

    population: int
    mean: np.ndarray  # (M, n): running mean of each model
    rate_low: np.ndarray
    rate_high: np.ndarray
    pairs: tuple[np.ndarray, np.ndarray]  # upper-triangle (i, j), i < j
    diff_low: np.ndarray  # (P, n): bounds on rate_i - rate_j
    diff_high: np.ndarray


def paths(outcomes: np.ndarray, population: int, alpha_rate: float, alpha_pair: float) -> Paths:
    """The sequences over ``outcomes`` (M, n): 1 pass, 0 not, in the order's positions."""
    x = np.asarray(outcomes, float)
    m, n = x.shape
    t = np.arange(1, n + 1)
    rate_low, rate_high = mean_path(x, population, alpha_rate)
    i, j = np.triu_indices(m, 1)
    low, high = mean_path((x[i] - x[j] + 1.0) / 2.0, population, alpha_pair)
    return Paths(population, np.cumsum(x, axis=1) / t, rate_low, rate_high, (i, j), 2 * low - 1, 2 * high - 1)


@dataclass(frozen=True)
class Assessment:
    """What the sequences say at the current counts, and what is still open."""

    rates: list[Interval]
    separated: np.ndarray  # (M, M) bool: the pair's difference interval excludes 0
    above: np.ndarray  # (M, M) bool: row's rate is above column's, separated
    rank_low: np.ndarray  # (M,) best rank the model can have (1 = top)
    rank_high: np.ndarray
    open_models: np.ndarray  # (M,) bool: models the next wave samples
    answered: bool
    verdict: str = ""


def _pair_index(m: int) -> np.ndarray:
    index = np.full((m, m), -1, dtype=np.int64)
    i, j = np.triu_indices(m, 1)
    index[i, j] = np.arange(len(i))
    index[j, i] = index[i, j]
    return index


def difference(p: Paths, counts: np.ndarray, a: int, b: int) -> Interval:
    """The interval on rate_a - rate_b over the units both have run."""
    n = int(min(counts[a], counts[b]))
    if n == 0:
        return Interval(-1.0, 1.0, float("nan"), 0, p.population)
    k = int(_pair_index(len(counts))[a, b])
    low, high = float(p.diff_low[k, n - 1]), float(p.diff_high[k, n - 1])
    if a > b:  # the path is of rate_i - rate_j with i < j
        low, high = -high, -low
    return Interval(low, high, float(p.mean[a, n - 1] - p.mean[b, n - 1]), n, p.population)


def assess(question: Question, models: list[str], p: Paths, counts: np.ndarray) -> Assessment:
    """Intervals at ``counts`` (units run per model), and which models the question still needs."""
    m = len(models)
    counts = np.asarray(counts, dtype=np.int64)
    rates = []
    for k in range(m):
        n = int(counts[k])
        if n == 0:
            rates.append(Interval(0.0, 1.0, float("nan"), 0, p.population))
            continue
        low, high = float(p.rate_low[k, n - 1]), float(p.rate_high[k, n - 1])
        rates.append(Interval(min(low, high), max(low, high), float(p.mean[k, n - 1]), n, p.population))
    i, j = p.pairs
    common = np.minimum(counts[i], counts[j])
    col = np.maximum(common - 1, 0)
    k_index = np.arange(len(i))
    pair_low = np.where(common > 0, p.diff_low[k_index, col], -1.0)
    pair_high = np.where(common > 0, p.diff_high[k_index, col], 1.0)
    above = np.zeros((m, m), dtype=bool)
    above[i, j] = pair_low > 0
    above[j, i] = pair_high < 0
    separated = above | above.T
    rank_low = 1 + above.sum(0)  # models certainly above this one
    rank_high = m - above.sum(1)  # minus models certainly below
    full = counts >= p.population
    if question.kind == "rank":
        settled = (rank_high - rank_low) <= 2 * question.places
        wanted = ~separated & ~np.eye(m, dtype=bool) & ~(settled[:, None] & settled[None, :])
        wanted &= ~(full[:, None] & full[None, :])
        open_models = wanted.any(1) & ~full
        answered = bool(settled.all())
        verdict = f"every rank to +-{question.places}" if answered else f"{int((~settled).sum())} ranks open"
    elif question.kind == "width":
        half = np.array([r.half_width for r in rates])
        settled = (half <= question.width) | full
        open_models = ~settled
        answered = bool(settled.all())
        verdict = f"every rate to +-{question.width:g}" if answered else f"{int((~settled).sum())} rates open"
    else:
        a, b = models.index(question.pair[0]), models.index(question.pair[1])
        diff = difference(p, counts, a, b)
        yes, no = diff.low > question.margin, diff.high < question.margin
        exact = bool(full[a] and full[b])
        answered = yes or no or exact
        open_models = np.zeros(m, dtype=bool)
        if not answered:
            open_models[[a, b]] = True
            open_models &= ~full
        verdict = "yes" if yes else "no" if no or exact else "open"
    return Assessment(rates, separated, above, rank_low, rank_high, open_models, answered, verdict)


def wave_cost(costs: np.ndarray, counts: np.ndarray, step: np.ndarray) -> float:
    """Expected cost of running ``step[m]`` more units of each model (``costs`` in order positions)."""
    total = 0.0
    for k in np.flatnonzero(step):
        total += float(costs[k, counts[k] : counts[k] + step[k]].sum())
    return total


def next_wave(open_models: np.ndarray, counts: np.ndarray, population: int, step: int, costs: np.ndarray,
              spent: float, cap: float | None) -> np.ndarray:  # fmt: skip
    """Units each model runs next: ``step`` for every open model, cut so the wave fits the cap.

    The cut keeps the wave even across open models (the largest equal step that fits), so the cap
    never makes the sample of one open model deeper than another's by more than the order gives.
    """
    room = np.where(open_models, np.minimum(step, population - counts), 0)
    if cap is None or wave_cost(costs, counts, room) <= cap - spent:
        return room
    lo, hi = 0, int(room.max())
    while lo < hi:  # the largest s with cost(min(room, s)) <= cap - spent
        mid = (lo + hi + 1) // 2
        if wave_cost(costs, counts, np.minimum(room, mid)) <= cap - spent:
            lo = mid
        else:
            hi = mid - 1
    return np.minimum(room, lo)


@dataclass
class Wave:
    """One wave: the counts after it, the cost so far and the assessment."""

    counts: np.ndarray
    spent: float
    assessment: Assessment


@dataclass
class Sweep:
    """A simulated or replayed sweep: every wave, and why it stopped."""

    question: Question
    models: list[str]
    waves: list[Wave] = field(default_factory=list)
    stop: Stop = ""

    @property
    def final(self) -> Wave:
        return self.waves[-1]


def simulate(question: Question, models: list[str], outcomes: np.ndarray, costs: np.ndarray, *,
             step: int, first: int | None = None, cap: float | None = None) -> Sweep:  # fmt: skip
    """Run the sweep over known outcomes, revealing them in the order's positions.

    Args:
        outcomes: (M, N) pass (1) or not (0) of every model on every unit, in order positions.
        costs: (M, N) expected cost of each of those trials, same positions.
        step: units an open model runs per wave; ``first``: units every model runs in wave one.
        cap: the most the sweep may spend (expected cost), or None.
    """
    m, population = outcomes.shape
    alpha_rate, alpha_pair = question.alphas(m)
    p = paths(outcomes, population, alpha_rate, alpha_pair)
    counts = np.zeros(m, dtype=np.int64)
    sweep = Sweep(question, list(models))
    spent = 0.0
    wave = next_wave(question.involved(sweep.models), counts, population, first or step, costs, spent, cap)
    while True:
        if not wave.any():  # an open question, and not one more unit fits the cap
            sweep.stop = "cap"
            if not sweep.waves:
                sweep.waves.append(Wave(counts.copy(), spent, assess(question, sweep.models, p, counts)))
            return sweep
        spent += wave_cost(costs, counts, wave)
        counts = counts + wave
        found = assess(question, sweep.models, p, counts)
        sweep.waves.append(Wave(counts.copy(), spent, found))
        if found.answered:
            sweep.stop = "answered"
            return sweep
        if not found.open_models.any():
            sweep.stop = "exhausted"
            return sweep
        wave = next_wave(found.open_models, counts, population, step, costs, spent, cap)
