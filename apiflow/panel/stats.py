"""The statistics a calibrated panel is fitted to and checked on, computed the same way for the
published table and for simulated trials (``apiflow.analysis``'s definitions: trial-pooled pass
rates over counted trials, best-of-E / all-E-of-E per task, the failure classes of the report)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apiflow.analysis import reach
from apiflow.analysis.failures import failure_classes
from apiflow.analysis.trials import Trials
from apiflow.models.latent import SOLO, ModelStats


@dataclass(frozen=True)
class TaskComposition:
    """One entry per task: its subtask count (``latent.SOLO`` for a solo task) and whether it is a chain."""

    subtasks: np.ndarray
    chain: np.ndarray
    world: np.ndarray
    epochs: int


def _rate(trials: Trials, mask: np.ndarray) -> float:
    counted = trials.counted & mask
    return float((trials.passed & mask).sum() / counted.sum()) if counted.any() else float("nan")


def model_stats(trials: Trials) -> dict[str, ModelStats]:
    """Every model's statistics, by model name."""
    counts = reach.task_counts(trials, np.ones(trials.n, bool))
    best, every = reach.best_of(counts), reach.all_of(counts, counts.epochs)
    classes = failure_classes(trials)
    lengths = sorted(int(k) for k in np.unique(trials.length[trials.chain]))
    out = {}
    for m, name in enumerate(trials.models):
        mine = trials.model == m
        failed = mine & (classes != "")
        n_failed = max(int(failed.sum()), 1)
        out[name] = ModelStats(
            trials=int((mine & trials.counted).sum()),
            rate=_rate(trials, mine),
            solo=_rate(trials, mine & trials.solo),
            by_length={k: _rate(trials, mine & trials.chain & (trials.length == k)) for k in lengths},
            best_of=float(np.nanmean(best[m])),
            all_of=float(np.nanmean(every[m])),
            delivery_share=float((classes[failed] == "delivery_only").sum() / n_failed),
            abstained_share=float((classes[failed] == "abstained").sum() / n_failed),
        )
    return out


def composition(trials: Trials) -> TaskComposition:
    """The task composition of a trial set (what the closed-form model averages over)."""
    chain = np.zeros(len(trials.tasks), bool)
    length = np.ones(len(trials.tasks), np.int64)
    world = np.zeros(len(trials.tasks), np.int64)
    chain[trials.task] = trials.chain
    length[trials.task] = trials.length
    world[trials.task] = trials.world
    epochs = reach.task_counts(trials, np.ones(trials.n, bool)).epochs
    return TaskComposition(np.where(chain, length, SOLO), chain, world, epochs)


def never_passed_matrix(trials: Trials) -> np.ndarray:
    """(M, T) float: 1 where the model passed no epoch of the task."""
    counts = reach.task_counts(trials, np.ones(trials.n, bool))
    return (counts.present & (counts.c == 0)).astype(float)


def shared_failures(trials: Trials) -> float:
    """Mean over model pairs of the share of tasks neither model ever passed: how much the models
    fail the *same* tasks (0.081 in the published panel against 0.011 were they independent)."""
    never = never_passed_matrix(trials)
    both = never @ never.T / never.shape[1]
    upper = np.triu_indices(never.shape[0], 1)
    return float(both[upper].mean()) if upper[0].size else float("nan")


def world_spread(trials: Trials) -> float:
    """SD across worlds of the panel's mean per-task pass rate (how much whole worlds differ)."""
    counts = reach.task_counts(trials, np.ones(trials.n, bool))
    rate = (counts.c / np.maximum(counts.n, 1)).mean(0)
    means = [rate[counts.world_of_task == w].mean() for w in np.unique(counts.world_of_task)]
    return float(np.std(means))
