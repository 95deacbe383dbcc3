"""Variation: the world x model pass-rate table and where the variance sits.

On a slice, the table's cells are per (world, model) pass rates. A two-way additive
decomposition on the complete cells splits the cells' variance (equal weight per cell) into a
world part (between world means), a model part (between model means) and the rest
(interaction + trial noise), each as a share of the total sum of squares.
"""

from __future__ import annotations

import numpy as np

from apiflow.analysis.rates import world_model_counts
from apiflow.analysis.trials import Trials


def world_model_table(trials: Trials, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pass rate (NaN where empty) and counted trials per (world, model): shapes (W, M)."""
    passes, counted = world_model_counts(trials, mask)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted > 0, passes / np.where(counted > 0, counted, 1), np.nan), counted


def variance_split(rates: np.ndarray) -> dict:
    """World vs model variance of a (W, M) rate table, using worlds with every model present.

    Returns:
        ``world_var`` / ``model_var``: variance (points^2) of world means / model means;
        ``world_share`` / ``model_share`` / ``residual_share``: shares of the total sum of squares.
    """
    complete = rates[~np.isnan(rates).any(axis=1)] * 100.0
    w, m = complete.shape if complete.ndim == 2 else (0, 0)
    if w < 2 or m < 2:
        return {
            "worlds": int(w),
            "models": int(m),
            "world_var": None,
            "model_var": None,
            "world_share": None,
            "model_share": None,
            "residual_share": None,
        }
    grand = complete.mean()
    world_means = complete.mean(axis=1)
    model_means = complete.mean(axis=0)
    ss_total = float(((complete - grand) ** 2).sum())
    ss_world = float(m * ((world_means - grand) ** 2).sum())
    ss_model = float(w * ((model_means - grand) ** 2).sum())
    share = (lambda ss: ss / ss_total) if ss_total > 0 else (lambda ss: None)
    return {
        "worlds": int(w),
        "models": int(m),
        "world_var": float(world_means.var(ddof=1)),
        "model_var": float(model_means.var(ddof=1)),
        "world_share": share(ss_world),
        "model_share": share(ss_model),
        "residual_share": share(ss_total - ss_world - ss_model) if ss_total > 0 else None,
    }
