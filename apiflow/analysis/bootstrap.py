"""World cluster bootstrap (RUNNER-NOTES §D.4), vectorised.

Each resample draws W worlds with replacement; a drawn world brings every trial of it (so a
model's epochs of a task stay together). A resample is summarised by how many times each world
was drawn, ``counts`` (B, W), so any ratio statistic sum(numerator) / sum(denominator) over the
resampled worlds is ``counts @ numerator / counts @ denominator`` — one matrix product for all B
resamples and all models at once. Every statistic of one report uses the same ``counts``, which
makes differences between models (and between observed and predicted) paired.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

LEVEL = 0.90


@dataclass(frozen=True)
class WorldResamples:
    """How often each world is drawn in each of B resamples: int array (B, W)."""

    counts: np.ndarray
    seed: int

    @property
    def b(self) -> int:
        """Number of resamples."""
        return self.counts.shape[0]

    def ratio(self, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
        """Resampled ratio estimator.

        Args:
            numerator: per-world sums, shape (W,) or (W, M).
            denominator: per-world sizes, same shape.

        Returns:
            (B,) or (B, M) array; NaN where a resample holds no trial of a column.
        """
        num = self.counts @ numerator
        den = self.counts @ denominator
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def resample_worlds(n_worlds: int, b: int, seed: int) -> WorldResamples:
    """Draw ``b`` seeded cluster resamples of ``n_worlds`` worlds."""
    rng = np.random.default_rng(seed)
    if b <= 0 or n_worlds == 0:
        return WorldResamples(np.zeros((0, n_worlds), dtype=np.int64), seed)
    counts = rng.multinomial(n_worlds, np.full(n_worlds, 1.0 / n_worlds), size=b)
    return WorldResamples(counts.astype(np.float64), seed)


def interval(samples: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """Percentile interval along axis 0: shape (2,) or (2, M); NaN when there are no samples."""
    if samples.shape[0] == 0:
        return np.full((2,) + samples.shape[1:], np.nan)
    tail = (1.0 - level) / 2.0
    levels = [tail, 1.0 - tail]
    if not np.isnan(samples).any():
        return np.quantile(samples, levels, axis=0)  # much faster than nanquantile's per-column loop
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: a model absent everywhere
        return np.nanquantile(samples, levels, axis=0)


def ci(samples: np.ndarray, level: float = LEVEL) -> list[float | None]:
    """A single statistic's interval as a JSON-ready ``[low, high]``."""
    low, high = interval(samples, level)
    return [_finite(low), _finite(high)]


def _finite(x) -> float | None:
    x = float(x)
    return None if x != x else x
