"""Cells whose trials different models served: the provider changed what answers a model id mid-grid.

Each record keeps, per provider call, what the provider said served it (``apiflow.served``: model id,
``system_fingerprint``, request id); each row keeps its trial's distinct ``model@fingerprint`` values
(``apiflow.results.rows.served_text``). A (model, task) cell whose trials name more than one value is
flagged: a silent model update or a new deployment makes its epochs measurements of two models, so its
pass rate, pass^k and epoch-to-epoch spread no longer describe one. Rows that name nothing (offline
models, published rows) are never flagged.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from apiflow.analysis.document import FLAG, Section, Table
from apiflow.analysis.trials import Trials
from apiflow.results.rows import served_values

SHOWN_CELLS = 50
"""Flagged cells listed in the report's table; ``summary.json`` lists every one."""


def served_cells(trials: Trials) -> dict:
    """``summary["served"]``: what served each model, and every cell served by more than one value.

    ``trials`` and ``cells`` count the trials and (model, task) cells that name what served them;
    ``models[m][value]`` and a flagged cell's ``served[value]`` count trials naming ``value``.
    """
    column = trials.columns.get("served")
    counts: defaultdict[tuple[int, int], Counter[str]] = defaultdict(Counter)
    named: Counter[tuple[int, int]] = Counter()
    if column is not None:
        for i in np.flatnonzero(column != ""):
            cell = (int(trials.model[i]), int(trials.task[i]))
            names = served_values(column[i])
            counts[cell].update(names)
            named[cell] += bool(names)
    by_model: defaultdict[str, Counter[str]] = defaultdict(Counter)
    flagged = []
    for (m, t), values in sorted(counts.items()):
        by_model[trials.models[m]].update(values)
        if len(values) > 1:
            flagged.append({"model": trials.models[m], "task_id": trials.tasks[t], "trials": named[(m, t)],
                            "served": dict(sorted(values.items()))})  # fmt: skip
    return {
        "trials": sum(named.values()),
        "cells": sum(1 for n in named.values() if n),
        "flagged": flagged,
        "models": {model: dict(sorted(values.items())) for model, values in sorted(by_model.items())},
    }


def _listed(values: dict[str, int]) -> str:
    return ", ".join(f"{value} ×{n}" for value, n in values.items())


def served_flag_line(s: dict, *, pointer: bool = True) -> str:
    """One sentence for under the leaderboard (``pointer``: naming the section) when a cell is flagged, else ""."""
    served = s.get("served") or {}
    flagged = served.get("flagged") or []
    if not flagged:
        return ""
    models = sorted({c["model"] for c in flagged})
    return (
        f"{FLAG} {len(flagged)} of {served['cells']} cells were served by more than one model id or fingerprint "
        f"({', '.join(models)}): their epochs mix models" + (" (see Served models)." if pointer else ".")
    )


def served_section(s: dict) -> Section | None:
    """What served each model and the flagged cells; None when no trial names what served it."""
    served = s.get("served") or {}
    if not served.get("trials"):
        return None
    flagged = served["flagged"]
    flagged_by_model = Counter(c["model"] for c in flagged)
    text = [
        "What the provider said served each call (model id and system fingerprint, as recorded per call in "
        "apiflow.served), gathered per trial. A cell (model × task) whose trials were served by more than one "
        "value is flagged: a silent model update or a new deployment mid-grid makes its epochs measurements of "
        "different models, so its pass rate, pass^k and epoch-to-epoch spread do not describe one model. "
        "Rerun such cells on one version, or read them apart.",
        f"{FLAG} {len(flagged)} of {served['cells']} cells flagged."
        if flagged
        else f"Every one of the {served['cells']} cells naming what served it was served by one value.",
    ]
    per_model = Table(
        ["model", "served (trials)", "flagged cells"],
        [
            [model, _listed(values), str(flagged_by_model.get(model, 0))]
            for model, values in served["models"].items()
        ],
    )
    tables = [per_model]
    if flagged:
        tables.append(Table(
            ["model", "task", "trials", "served (trials)", "flag"],
            [[c["model"], c["task_id"], str(c["trials"]), _listed(c["served"]), FLAG] for c in flagged[:SHOWN_CELLS]],
        ))  # fmt: skip
        if len(flagged) > SHOWN_CELLS:
            text.append(f"The table shows the first {SHOWN_CELLS}; summary.json lists all {len(flagged)}.")
    return Section("Served models", text, tables)
