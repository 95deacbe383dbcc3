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


def screen_cells(trials: Trials) -> Screen:
    """Flag the chain cells with no pass in the analysed set."""
    n_tasks = len(trials.tasks)
    passes = np.bincount(trials.task, weights=trials.passed, minlength=n_tasks)
    has_trials = np.bincount(trials.task, weights=trials.counted, minlength=n_tasks) > 0
    is_chain = np.zeros(n_tasks, dtype=bool)
    is_chain[trials.task] = trials.chain
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
