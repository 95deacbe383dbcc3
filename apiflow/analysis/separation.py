"""Model separation: how far apart the models' pass rates are.

Spread in points = max - min of the per-model pass rates; on the log-odds scale = logit(max) -
logit(min). A rate of exactly 0 or 1 has no finite logit, so rates are clipped to
[0.5/n, 1 - 0.5/n] (n = that model's counted trials) before the logit.
"""

from __future__ import annotations

import numpy as np


def logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p))."""
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def clipped(rates: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """Rates moved half a trial away from 0 and 1."""
    half = 0.5 / np.maximum(trials, 1)
    return np.clip(rates, half, 1.0 - half)


def spread(rates: np.ndarray, trials: np.ndarray) -> dict:
    """Points and log-odds spread of per-model rates (models without trials are left out).

    Args:
        rates: per-model pass rates.
        trials: per-model counted trials (for the clipping).
    """
    keep = trials > 0
    if keep.sum() < 2:
        return {"points": None, "log_odds": None, "max_model_index": None, "min_model_index": None}
    r, n = rates[keep], trials[keep]
    hi, lo = int(np.argmax(r)), int(np.argmin(r))
    odds = logit(clipped(r, n))
    index = np.flatnonzero(keep)
    return {
        "points": float(100.0 * (r[hi] - r[lo])),
        "log_odds": float(odds[hi] - odds[lo]),
        "max_model_index": int(index[hi]),
        "min_model_index": int(index[lo]),
    }


def spread_samples(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap spread (points, log-odds) from resampled per-model rates of shape (B, M).

    Logits of resampled rates are clipped at 1e-4 from 0 and 1.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        hi = np.nanmax(samples, axis=1)
        lo = np.nanmin(samples, axis=1)
    eps = 1e-4
    odds = logit(np.clip(hi, eps, 1 - eps)) - logit(np.clip(lo, eps, 1 - eps))
    return 100.0 * (hi - lo), odds
