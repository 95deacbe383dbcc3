"""Pass rates: per model and pooled, over any slice of trials.

A pass rate is passes / counted trials of the slice (trial-pooled). Unscored trials are never
passes; they are in the denominator only under ``count_unscored``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apiflow.analysis.trials import Trials


@dataclass(frozen=True)
class Rate:
    """Passes over counted trials; ``unscored`` are the slice's unscored trials (counted or not)."""

    passes: int
    trials: int
    unscored: int

    @property
    def rate(self) -> float:
        """Pass rate, NaN for an empty slice."""
        return self.passes / self.trials if self.trials else float("nan")

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "rate": _finite(self.rate),
            "passes": self.passes,
            "trials": self.trials,
            "unscored": self.unscored,
        }


def _finite(x: float) -> float | None:
    return None if x != x else float(x)


def rate_of(trials: Trials, mask: np.ndarray) -> Rate:
    """Pooled pass rate of the trials in ``mask``."""
    return Rate(
        passes=int((trials.passed & mask).sum()),
        trials=int((trials.counted & mask).sum()),
        unscored=int((trials.unscored & mask).sum()),
    )


def world_model_counts(trials: Trials, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Passes and counted trials per (world, model): two arrays of shape (W, M)."""
    shape = (len(trials.worlds), len(trials.models))
    cell = trials.world * shape[1] + trials.model
    size = shape[0] * shape[1]
    passes = np.bincount(cell, weights=(trials.passed & mask), minlength=size).reshape(shape)
    counted = np.bincount(cell, weights=(trials.counted & mask), minlength=size).reshape(shape)
    return passes, counted


def model_rates(trials: Trials, mask: np.ndarray) -> list[Rate]:
    """One pooled pass rate per model (in ``trials.models`` order)."""
    passes, counted = world_model_counts(trials, mask)
    unscored = np.bincount(trials.model, weights=(trials.unscored & mask), minlength=len(trials.models))
    return [
        Rate(int(p), int(n), int(u)) for p, n, u in zip(passes.sum(0), counted.sum(0), unscored, strict=True)
    ]
