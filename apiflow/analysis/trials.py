"""The analysed trials as numpy columns, with outcomes classified once.

Outcome classes (docs/design/050-analysis-conventions.md):
* **scored**: graded by the verifier (verdict ``C`` or ``I``) and not a harness/provider outcome;
* **unscored**: verdict ``""`` (the published 19) or ``harness`` true (ours) — never a pass;
* **counted**: the trials in every denominator — scored only by default, all with ``count_unscored``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from apiflow.errors import UsageError
from apiflow.results.taskid import parse_task_id

REQUIRED = ("model", "task_id", "verdict")


def _strings(table: pa.Table, name: str, default: str = "") -> np.ndarray:
    if name not in table.column_names or pa.types.is_null(table[name].type):
        return np.full(table.num_rows, default, dtype=object)
    return np.asarray(
        pc.fill_null(table[name].cast(pa.string()), default).to_numpy(zero_copy_only=False), dtype=object
    )


def _numbers(table: pa.Table, name: str, dtype=float, default=np.nan) -> np.ndarray:
    if name not in table.column_names or pa.types.is_null(table[name].type):
        return np.full(table.num_rows, default, dtype=dtype)
    column = table[name]
    if pa.types.is_boolean(column.type) or dtype is bool:
        return np.asarray(pc.fill_null(column, bool(default)).to_numpy(zero_copy_only=False), dtype=bool)
    return np.asarray(
        pc.fill_null(column.cast(pa.float64()), float(default)).to_numpy(zero_copy_only=False), dtype=dtype
    )


def _codes(values: np.ndarray) -> tuple[list[str], np.ndarray]:
    names, codes = np.unique(values.astype(str), return_inverse=True)
    return [str(n) for n in names], codes.astype(np.int64)


@dataclass
class Trials:
    """Column arrays of one analysed trial set (one entry per trial); treat as read-only."""

    models: list[str]
    worlds: list[str]
    tasks: list[str]
    model: np.ndarray  # int index into models
    world: np.ndarray  # int index into worlds
    task: np.ndarray  # int index into tasks
    chain: np.ndarray  # bool: chain task (else solo)
    length: np.ndarray  # int: chain length K, or the solo step number
    verdict: np.ndarray  # object str
    harness: np.ndarray  # bool: harness/provider outcome (ours)
    g1: np.ndarray  # bool (False when unknown)
    g2: np.ndarray
    abstained: np.ndarray  # object: "", "clarify", "report_blocked"
    columns: dict[str, np.ndarray] = field(default_factory=dict)  # tokens, cost, duration, panel...
    count_unscored: bool = False

    @property
    def n(self) -> int:
        """Number of trials."""
        return len(self.model)

    @cached_property
    def unscored(self) -> np.ndarray:
        """Trials that say nothing about the model: no verdict, or a harness/provider outcome."""
        return ~np.isin(self.verdict, ("C", "I")) | self.harness

    @cached_property
    def scored(self) -> np.ndarray:
        """Trials the verifier graded."""
        return ~self.unscored

    @cached_property
    def passed(self) -> np.ndarray:
        """Passes (an unscored trial is never a pass)."""
        return (self.verdict == "C") & self.scored

    @cached_property
    def counted(self) -> np.ndarray:
        """Trials in the denominators under the chosen convention."""
        return np.ones(self.n, dtype=bool) if self.count_unscored else self.scored

    @cached_property
    def solo(self) -> np.ndarray:
        """Solo-task trials."""
        return ~self.chain


def trials_from_table(table: pa.Table, *, count_unscored: bool = False) -> Trials:
    """Classify and index the rows of a trial table.

    Raises:
        UsageError: a required column is missing or the table is empty.
    """
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        raise UsageError(f"input rows lack column(s) {', '.join(missing)}: not a trial table")
    if table.num_rows == 0:
        raise UsageError("no trials left to analyse (check --panel / --models)")
    task_ids = _strings(table, "task_id")
    tasks, task = _codes(task_ids)
    refs = [parse_task_id(t) for t in tasks]
    models, model = _codes(_strings(table, "model"))
    world_of_task = np.array([r.world for r in refs], dtype=object)
    worlds, world_code_of_task = _codes(world_of_task)
    chain_of_task = np.array([r.kind == "chain" for r in refs], dtype=bool)
    length_of_task = np.array([r.length for r in refs], dtype=np.int64)
    columns = {
        name: _numbers(table, name)
        for name in (
            "tokens_input",
            "tokens_output",
            "tokens_cache",
            "tokens_total",
            "tokens_cache_read",
            "tokens_cache_write",
            "tokens_reasoning",
            "cost_usd",
            "duration_s",
            "epoch",
            "trial",
        )
    }
    columns["panel"] = _strings(table, "panel")
    columns["model_api"] = _strings(table, "model_api")
    columns["termination"] = _strings(table, "termination")
    columns["harness_error"] = _strings(table, "harness_error")
    columns["served"] = _strings(table, "served")
    return Trials(
        models=models,
        worlds=worlds,
        tasks=tasks,
        model=model,
        world=world_code_of_task[task],
        task=task,
        chain=chain_of_task[task],
        length=length_of_task[task],
        verdict=_strings(table, "verdict"),
        harness=_numbers(table, "harness", dtype=bool, default=False),
        g1=_numbers(table, "g1_passed", dtype=bool, default=False),
        g2=_numbers(table, "g2_passed", dtype=bool, default=False),
        abstained=_strings(table, "abstained"),
        columns=columns,
        count_unscored=count_unscored,
    )


def select_rows(
    table: pa.Table, *, panel: str | None = None, models: Sequence[str] | None = None
) -> pa.Table:
    """Restrict to one published panel and/or a list of model slugs.

    Raises:
        UsageError: the panel or a model is not in the table.
    """
    if panel:
        if "panel" not in table.column_names:
            raise UsageError("--panel given but the input has no 'panel' column")
        present = set(pc.unique(table["panel"]).to_pylist())
        if panel not in present:
            raise UsageError(
                f"panel {panel!r} not in input (have: {', '.join(sorted(p for p in present if p))})"
            )
        table = table.filter(pc.equal(table["panel"], panel))
    if models:
        present = set(pc.unique(table["model"]).to_pylist())
        unknown = [m for m in models if m not in present]
        if unknown:
            raise UsageError(f"model(s) not in input: {', '.join(unknown)}")
        table = table.filter(pc.is_in(table["model"], value_set=pa.array(list(models))))
    return table
