"""Screen for chain cells that no model passes.

A cell is one chain task (world x length). A cell with zero passes across every model and
trial of the analysed set is flagged: such a cell more likely measures a task defect than the
models, so every chain statistic is reported inclusive and clean (flagged cells removed).
Cells with 1-3 passes are listed as near-zero but not removed (unadjudicated).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apiflow.analysis.trials import Trials

NEAR_ZERO_MAX = 3


@dataclass(frozen=True)
class Screen:
    """The outcome of the cell screen."""

    flagged: list[str]
    near_zero: list[tuple[str, int]]
    flagged_trials: int
    chain_trials: int
    flagged_task_mask: np.ndarray  # bool per task index

    @property
    def share(self) -> float:
        """Fraction of counted chain trials that sit in flagged cells."""
        return self.flagged_trials / self.chain_trials if self.chain_trials else float("nan")

    def clean(self, trials: Trials) -> np.ndarray:
        """Per-trial mask: not in a flagged cell."""
        return ~self.flagged_task_mask[trials.task]

    def as_dict(self) -> dict:
        """JSON-ready form."""
        return {
            "flagged_cells": self.flagged,
            "n_flagged": len(self.flagged),
            "flagged_trials": self.flagged_trials,
            "chain_trials": self.chain_trials,
            "flagged_share": self.share if self.chain_trials else None,
            "near_zero_cells": [{"task_id": t, "passes": p} for t, p in self.near_zero],
        }


def _cells(trials: Trials) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task index: passes, is a chain, has counted trials."""
    n_tasks = len(trials.tasks)
    passes = np.bincount(trials.task, weights=trials.passed, minlength=n_tasks)
    has_trials = np.bincount(trials.task, weights=trials.counted, minlength=n_tasks) > 0
    is_chain = np.zeros(n_tasks, dtype=bool)
    is_chain[trials.task] = trials.chain
    return passes, is_chain, has_trials


def screen_cells(trials: Trials) -> Screen:
    """Flag the chain cells with no pass in the analysed set."""
    passes, is_chain, has_trials = _cells(trials)
    flagged = is_chain & has_trials & (passes == 0)
    near = is_chain & (passes >= 1) & (passes <= NEAR_ZERO_MAX)
    counted_chain = trials.counted & trials.chain
    return Screen(
        flagged=[trials.tasks[i] for i in np.flatnonzero(flagged)],
        near_zero=[(trials.tasks[i], int(passes[i])) for i in np.flatnonzero(near)],
        flagged_trials=int((counted_chain & flagged[trials.task]).sum()),
        chain_trials=int(counted_chain.sum()),
        flagged_task_mask=flagged,
    )


def cells_at_most(trials: Trials, max_passes: int) -> list[str]:
    """Chain cells (with counted trials) whose passes over the analysed set are at most ``max_passes``.

    ``max_passes=0`` is the screen's flag (``screen_cells(trials).flagged``); 1 and 3 widen it to
    the near-zero cells, which is how screen evaluation (docs/design/071) trades precision for recall.
    """
    passes, is_chain, has_trials = _cells(trials)
    return [trials.tasks[i] for i in np.flatnonzero(is_chain & has_trials & (passes <= max_passes))]
