"""Failure composition of failed scored trials.

Each failure falls in exactly one class: ``abstained`` (clarify / report_blocked — checked
first, since an abstention fails whatever its predicates say), else by predicate group:
``state_only`` (G1 x, G2 ok), ``delivery_only`` (G1 ok, G2 x), ``both`` (G1 x, G2 x).
``other`` catches a failure with both groups passing and no abstention (none published).
"""

from __future__ import annotations

import numpy as np

from apiflow.analysis.trials import Trials

CLASSES = ("state_only", "delivery_only", "both", "abstained", "other")


def failure_classes(trials: Trials) -> np.ndarray:
    """Per-trial failure class ("" for passes and unscored trials)."""
    failed = trials.scored & ~trials.passed
    abstained = trials.abstained != ""
    out = np.full(trials.n, "", dtype=object)
    out[failed & ~trials.g1 & trials.g2] = "state_only"
    out[failed & trials.g1 & ~trials.g2] = "delivery_only"
    out[failed & ~trials.g1 & ~trials.g2] = "both"
    out[failed & trials.g1 & trials.g2] = "other"
    out[failed & abstained] = "abstained"
    return out


def composition(trials: Trials, mask: np.ndarray, classes: np.ndarray | None = None) -> dict:
    """Counts of each failure class among the failed scored trials of ``mask``."""
    classes = failure_classes(trials) if classes is None else classes
    picked = classes[mask]
    counts = {name: int((picked == name).sum()) for name in CLASSES}
    return {"failures": int(sum(counts.values())), **counts}
