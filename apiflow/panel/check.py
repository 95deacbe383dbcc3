"""Published vs simulated, per model and statistic, with stated tolerances (``apiflow panel check``).

Each cell compares one published figure with the same figure of the calibrated panel played on a
bank, both computed from trial rows by the same code (``apiflow.analysis``'s counts, reach and
failure classes). The tolerance of a cell is

    z * sqrt(se_published^2 + se_simulated^2) + |closed form - published|

* the standard errors are world-cluster bootstrap SEs (``apiflow.analysis.bootstrap``): trials of a
  world are correlated (the panel fails the same tasks; epochs of a task agree), so a binomial SE
  over trials would be several times too small. The two sides are independent samples: the sim's
  stuck tasks are drawn afresh from the bank's content, not copied from the published ones;
* ``z`` holds the family-wise false-alarm rate at ``ALPHA`` over the whole table (Bonferroni over
  its cells): a correct panel fails the check by chance in at most 5 % of banks;
* the fit gap is what the closed form itself misses (the fit is a compromise across statistics); a
  simulation cannot be asked to be closer to the published figure than the model it plays out.

A second column compares the simulated figure with the closed form on the checked bank's own
task composition (tolerance ``z * se_simulated``): a miss there is a bug in the sim, not in the fit.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from apiflow.analysis import reach
from apiflow.analysis.bootstrap import resample_worlds
from apiflow.analysis.failures import failure_classes
from apiflow.analysis.trials import Trials
from apiflow.models.latent import LatentParams, predict
from apiflow.panel.stats import TaskComposition

LONG = (17, 20)
"""The pooled long-chain band (the issue quotes 0.6-0.74 at lengths 17-20; one length has only 11
chains per model, too few for a tight check on its own)."""

STATISTICS = (
    ("solo", "solo rate"),
    ("long", f"length {LONG[0]}-{LONG[1]} rate"),
    ("len20", "length-20 rate"),
    ("best_of", "best-of-E"),
    ("all_of", "all-E-of-E"),
    ("delivery", "delivery-only share of failures"),
)
INFORMATIVE = frozenset({"len20"})
"""Shown but not gated: 11 chains per model, its tolerance says little beyond the pooled band's."""
MIN_WORLDS = 3
"""Fewest worlds a checked bank may have: the tolerances are world-bootstrap SEs, and with one
world there is nothing to resample (the SE would be 0 and every tolerance the bare fit gap)."""
ALPHA = 0.05
BOOTSTRAP = 2000
SEED = 0


@dataclass(frozen=True)
class Cell:
    """One model's one statistic: published, closed form, simulated, tolerances, verdicts."""

    model: str
    statistic: str
    published: float
    closed_published: float  # the closed form on the published task composition (the fit's own gap)
    closed_bank: float  # the closed form on the checked bank's composition
    simulated: float
    se_published: float
    se_simulated: float
    tolerance: float
    sim_tolerance: float

    @property
    def applicable(self) -> bool:
        """Both sides have the statistic (a small bank may have no chain of length 17-20)."""
        return not (math.isnan(self.published) or math.isnan(self.simulated))

    @property
    def gated(self) -> bool:
        """Whether the cell decides the check's exit status."""
        return self.applicable and self.statistic not in INFORMATIVE

    @property
    def inside(self) -> bool:
        """Simulated within tolerance of published (True for a cell that does not apply)."""
        return not self.applicable or abs(self.simulated - self.published) <= self.tolerance

    @property
    def sim_inside(self) -> bool:
        """Simulated within tolerance of its own closed form (the sim plays the model faithfully)."""
        return not self.applicable or abs(self.simulated - self.closed_bank) <= self.sim_tolerance


def _per_task(trials: Trials, epochs: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per statistic, (numerator, denominator) arrays of shape (M, T); NaN outside the statistic.

    Best-of-E and all-E-of-E are the unbiased pass@E and pass^E estimators, so a check run with
    fewer epochs than the published five still compares like with like (with E = 5 epochs of
    every task they are exactly "passed at least once" and "passed every time")."""
    counts = reach.task_counts(trials, np.ones(trials.n, bool))
    chain = np.zeros(len(trials.tasks), bool)
    length = np.zeros(len(trials.tasks), np.int64)
    chain[trials.task], length[trials.task] = trials.chain, trials.length
    classes = failure_classes(trials)
    shape = counts.c.shape
    cell = trials.model * shape[1] + trials.task

    def tally(mask: np.ndarray) -> np.ndarray:
        return np.bincount(cell, weights=mask, minlength=shape[0] * shape[1]).reshape(shape)

    def within(tasks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        keep = counts.present & tasks[None, :]
        return np.where(keep, counts.c, np.nan), np.where(keep, counts.n, np.nan)

    failed = tally(classes != "")
    present = np.where(counts.present, 1.0, np.nan)
    return {
        "solo": within(~chain),
        "long": within(chain & (length >= LONG[0]) & (length <= LONG[1])),
        "len20": within(chain & (length == 20)),
        "best_of": (reach.pass_at_k(counts.c, counts.n, epochs), present),
        "all_of": (reach.pass_hat_k(counts.c, counts.n, epochs), present),
        "delivery": (
            np.where(failed > 0, tally(classes == "delivery_only"), np.nan),
            np.where(failed > 0, failed, np.nan),
        ),
    }


def observed(trials: Trials, epochs: int) -> dict[str, dict[str, tuple[float, float]]]:
    """Per model, per statistic: (value, world-bootstrap SE); best/all over ``epochs``."""
    n_worlds = len(trials.worlds)
    world_of_task = reach.task_counts(trials, np.zeros(trials.n, bool)).world_of_task
    resamples = resample_worlds(n_worlds, BOOTSTRAP, SEED)
    out: dict[str, dict[str, tuple[float, float]]] = {m: {} for m in trials.models}
    for key, (num, den) in _per_task(trials, epochs).items():
        num_w, _ = reach.world_sums(num, world_of_task, n_worlds)
        den_w, _ = reach.world_sums(den, world_of_task, n_worlds)
        total = den_w.sum(0)
        value = np.where(total > 0, num_w.sum(0) / np.maximum(total, 1e-12), np.nan)  # NaN: not in the bank
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: a statistic the bank lacks
            se = np.nanstd(resamples.ratio(num_w, den_w), axis=0, ddof=1)
        for m, name in enumerate(trials.models):
            out[name][key] = (float(value[m]), float(se[m]))
    return out


def closed_form(params: LatentParams, comp: TaskComposition, epochs: int) -> dict[str, float]:
    """The closed form's value of every statistic on a task composition, best/all over ``epochs``."""
    pred = predict(params, comp.subtasks, comp.chain, epochs)
    lengths = comp.subtasks[comp.chain]
    band = [k for k in pred.by_length if LONG[0] <= k <= LONG[1]]
    weights = np.array([(lengths == k).sum() for k in band], float)
    long = float(np.dot([pred.by_length[k] for k in band], weights) / weights.sum()) if band else math.nan
    return {
        "solo": pred.solo,
        "long": long,
        "len20": pred.by_length.get(20, float("nan")),
        "best_of": pred.best_of,
        "all_of": pred.all_of,
        "delivery": pred.delivery_share,
    }


def z_value(cells: int, alpha: float = ALPHA) -> float:
    """The two-sided normal quantile that keeps the family-wise false-alarm rate at ``alpha``."""
    return NormalDist().inv_cdf(1.0 - alpha / (2 * max(cells, 1)))


def check(
    published: Trials,
    simulated: Trials,
    params: dict[str, LatentParams],
    published_comp: TaskComposition,
    bank_comp: TaskComposition,
) -> list[Cell]:
    """Every (model, statistic) cell of the models present on both sides, in ``params`` order;
    best-of and all-of over the simulated run's epochs."""
    epochs = bank_comp.epochs
    pub, sim = observed(published, epochs), observed(simulated, epochs)
    models = [m for m in params if m in pub and m in sim]
    gated = sum(
        not (math.isnan(pub[m][k][0]) or math.isnan(sim[m][k][0]))
        for m in models
        for k, _ in STATISTICS
        if k not in INFORMATIVE
    )
    z = z_value(gated)
    cells = []
    for model in models:
        closed_pub = closed_form(params[model], published_comp, epochs)
        closed_bank = closed_form(params[model], bank_comp, epochs)
        for key, _ in STATISTICS:
            (p, se_p), (s, se_s) = pub[model][key], sim[model][key]
            cells.append(
                Cell(
                    model=model,
                    statistic=key,
                    published=p,
                    closed_published=closed_pub[key],
                    closed_bank=closed_bank[key],
                    simulated=s,
                    se_published=se_p,
                    se_simulated=se_s,
                    tolerance=z * float(np.hypot(se_p, se_s)) + abs(closed_pub[key] - p),
                    sim_tolerance=z * se_s,
                )
            )
    return cells


def _cell_text(cell: Cell) -> str:
    if not cell.applicable:
        return "n/a"
    mark = "" if cell.inside else " OUT"
    return f"{cell.published:.3f} / {cell.simulated:.3f} ±{cell.tolerance:.3f}{mark}"


def table(cells: list[Cell], epochs: int) -> str:
    """The markdown table: per model and statistic, published / simulated ±tolerance."""
    titles = [t.replace("E", str(epochs)) if k in ("best_of", "all_of") else t for k, t in STATISTICS]
    titles = [f"{t} (info)" if k in INFORMATIVE else t for (k, _), t in zip(STATISTICS, titles, strict=True)]
    lines = ["| model | " + " | ".join(titles) + " |", "|---" * (len(STATISTICS) + 1) + "|"]
    models = list(dict.fromkeys(c.model for c in cells))
    by = {(c.model, c.statistic): c for c in cells}
    for model in models:
        row = [_cell_text(by[(model, key)]) for key, _ in STATISTICS]
        lines.append(f"| {model} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def summary(cells: list[Cell]) -> dict:
    """Counts for the verdict: gated cells outside tolerance, and sim-vs-closed-form misses."""
    gated = [c for c in cells if c.gated]
    return {
        "cells": len(gated),
        "z": z_value(len(gated)),
        "outside": [f"{c.model}:{c.statistic}" for c in gated if not c.inside],
        "not_applicable": [f"{c.model}:{c.statistic}" for c in cells if not c.applicable],
        "sim_vs_closed_form_outside": [f"{c.model}:{c.statistic}" for c in gated if not c.sim_inside],
    }
