"""Reach vs reliability: best-of-E, all-E-of-E, and the unbiased pass@k / pass^k estimators.

For task t with n_t counted trials of which c_t passed (RUNNER-NOTES §D):
* pass@k = 1 - C(n_t - c_t, k) / C(n_t, k)   (Chen et al. 2021), 1 when n_t - c_t < k;
* pass^k = C(c_t, k) / C(n_t, k)             (Yao et al. 2024), 0 when c_t < k;
averaged over tasks. A task with n_t < k (the published short pairs have 4 trials) has no
unbiased estimate; we take pass@k = 1[c_t > 0] (what was observed) and pass^k = 0 (it was not
passed k times), the same rule that keeps a task with fewer than E scored epochs out of all-E-of-E.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apiflow.analysis.trials import Trials

K_MAX = 5


@dataclass(frozen=True)
class TaskCounts:
    """Per (model, task) counts: passes ``c`` and counted trials ``n`` (arrays of shape (M, T))."""

    c: np.ndarray
    n: np.ndarray
    world_of_task: np.ndarray  # int world index per task

    @property
    def present(self) -> np.ndarray:
        """(M, T) bool: the model has at least one counted trial of the task."""
        return self.n > 0

    @property
    def epochs(self) -> int:
        """The design's epochs per task: the largest trial count seen."""
        return int(self.n.max()) if self.n.size else 0


def task_counts(trials: Trials, mask: np.ndarray) -> TaskCounts:
    """Count passes and counted trials per (model, task) within ``mask``."""
    shape = (len(trials.models), len(trials.tasks))
    cell = trials.model * shape[1] + trials.task
    size = shape[0] * shape[1]
    c = np.bincount(cell, weights=trials.passed & mask, minlength=size).reshape(shape).astype(np.int64)
    n = np.bincount(cell, weights=trials.counted & mask, minlength=size).reshape(shape).astype(np.int64)
    world_of_task = np.zeros(shape[1], dtype=np.int64)
    world_of_task[trials.task] = trials.world
    return TaskCounts(c=c, n=n, world_of_task=world_of_task)


def _comb_table(n_max: int, k_max: int) -> np.ndarray:
    # C(a, b) for a in 0..n_max, b in 0..k_max, as floats (C(a, b) = 0 for b > a).
    table = np.zeros((n_max + 1, k_max + 1))
    table[:, 0] = 1.0
    for a in range(1, n_max + 1):
        for b in range(1, k_max + 1):
            table[a, b] = table[a - 1, b - 1] + table[a - 1, b]
    return table


def pass_at_k(c: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """Per-task unbiased pass@k (NaN where n = 0)."""
    comb = _comb_table(int(max(n.max(initial=0), k)), k)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = 1.0 - comb[n - c, k] / comb[n, k]
    estimate = np.where(n < k, (c > 0).astype(float), estimate)
    return np.where(n > 0, estimate, np.nan)


def pass_hat_k(c: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """Per-task unbiased pass^k (NaN where n = 0)."""
    comb = _comb_table(int(max(n.max(initial=0), k)), k)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = comb[c, k] / comb[n, k]
    estimate = np.where(n < k, 0.0, estimate)
    return np.where(n > 0, estimate, np.nan)


def best_of(counts: TaskCounts) -> np.ndarray:
    """Per (model, task): at least one pass among the counted epochs (NaN where untried)."""
    return np.where(counts.present, (counts.c > 0).astype(float), np.nan)


def all_of(counts: TaskCounts, epochs: int) -> np.ndarray:
    """Per (model, task): passed in every epoch, with at least ``epochs`` counted epochs."""
    every = (counts.c == counts.n) & (counts.n >= epochs)
    return np.where(counts.present, every.astype(float), np.nan)


def world_sums(
    per_task: np.ndarray, world_of_task: np.ndarray, n_worlds: int
) -> tuple[np.ndarray, np.ndarray]:
    """Sum of a per-(model, task) statistic and number of tasks, per (world, model): shapes (W, M).

    The bootstrap's ratio estimator is sum / tasks over the resampled worlds.
    """
    known = ~np.isnan(per_task)
    values = np.where(known, per_task, 0.0)
    sums = np.zeros((n_worlds, per_task.shape[0]))
    tasks = np.zeros((n_worlds, per_task.shape[0]))
    for w in range(n_worlds):
        in_world = world_of_task == w
        sums[w] = values[:, in_world].sum(1)
        tasks[w] = known[:, in_world].sum(1)
    return sums, tasks
