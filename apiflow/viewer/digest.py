"""The few facts about a trial that the index pages need, computed with the analysis code.

A chunk of parsed trial JSONs is flattened by ``analysis.rows.transcript_row`` and classified by
``analysis.trials`` exactly as ``apiflow report`` does (what is scored, what passed, the failure
class of ``analysis.failures``); its cost is ``analysis.cost.trial_costs``: the cost the record
carries, else tokens x the pinned price table (docs/design/041-prices-and-rows.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from apiflow.analysis.cost import trial_costs
from apiflow.analysis.failures import failure_classes
from apiflow.analysis.rows import transcript_row
from apiflow.analysis.trials import trials_from_table
from apiflow.results.prices import PriceTable
from apiflow.results.taskid import parse_task_id
from apiflow.viewer.html import token

# The row columns the classification and the cost read (a chunk may mix published and own records).
_COLUMNS = (
    "model", "model_api", "task_id", "verdict", "harness", "g1_passed", "g2_passed", "abstained",
    "tokens_input", "tokens_output", "tokens_cache", "tokens_total", "tokens_cache_read",
    "tokens_cache_write", "tokens_reasoning", "cost_usd", "termination", "harness_error",
)  # fmt: skip

FAILURE_KINDS = {
    "state_only": "G1 state",
    "delivery_only": "G2 answer",
    "both": "G1 state + G2 answer",
    "abstained": "abstained",
    "other": "other",
    "unscored": "unscored",
    "pass": "pass",
}
"""Failure kind (the ``analysis.failures`` class, or pass / unscored) -> its label on the pages."""


@dataclass(frozen=True, slots=True)
class Predicate:
    """One predicate's outcome, as the task page's matrix shows it."""

    label: str
    group: str
    passed: bool


@dataclass(frozen=True, slots=True)
class TrialDigest:
    """What the leaderboard, model and task pages show of one trial."""

    key: str  # unique per model: our trial id, or <task_id>-t<trial> for published records
    model: str
    model_api: str
    task_id: str
    world: str
    kind: str  # solo | chain
    length: int
    trial: int
    status: str  # pass | fail | unscored | harness
    failure_kind: str  # a FAILURE_KINDS key
    failure_reason: str
    g1: bool
    g2: bool
    predicates_passed: int | None
    predicates_total: int | None
    tokens_total: int
    cost_usd: float | None
    duration_s: float
    termination: str
    predicates: tuple[Predicate, ...]

    @property
    def model_dir(self) -> str:
        """The model's folder under the site root."""
        return f"m/{token(self.model)}"

    @property
    def page(self) -> str:
        """The trial page, relative to its model's folder."""
        return f"t/{token(self.key)}.html"

    @property
    def task_page(self) -> str:
        """The task page (this model on this task), relative to its model's folder."""
        return f"task/{token(self.task_id)}.html"


def trial_key(trial: dict[str, Any]) -> str:
    """Our trial id, or ``<task_id>-t<trial>`` for a published record (unique within its model)."""
    trial_id = (trial.get("apiflow") or {}).get("trial_id")
    return str(trial_id) if trial_id else f"{trial['task_id']}-t{trial['trial']}"


def digest_trials(trials: list[dict[str, Any]], prices: PriceTable, *, reprice: bool) -> list[TrialDigest]:
    """Digests of parsed schema-1.0 trials, in order.

    Raises:
        KeyError, ValueError, TypeError: a trial lacks a required field (the caller names the file).
    """
    rows = [transcript_row(t) for t in trials]
    table = pa.Table.from_pylist([{c: r.get(c) for c in _COLUMNS} for r in rows])
    analysed = trials_from_table(table)
    costs = trial_costs(analysed, prices, reprice=reprice).usd
    classes = failure_classes(analysed)
    out = []
    for i, (trial, row) in enumerate(zip(trials, rows, strict=True)):
        if analysed.passed[i]:
            status, kind = "pass", "pass"
        elif analysed.unscored[i]:
            status, kind = ("harness" if analysed.harness[i] else "unscored"), "unscored"
        else:
            status, kind = "fail", str(classes[i])
        ref = parse_task_id(trial["task_id"])
        out.append(
            TrialDigest(
                key=trial_key(trial),
                model=trial["model"],
                model_api=str(trial.get("model_api") or ""),
                task_id=trial["task_id"],
                world=ref.world,
                kind=ref.kind,
                length=ref.length,
                trial=int(trial["trial"]),
                status=status,
                failure_kind=kind,
                failure_reason=str(trial.get("failure_reason") or ""),
                g1=bool(analysed.g1[i]),
                g2=bool(analysed.g2[i]),
                predicates_passed=row.get("predicates_passed"),
                predicates_total=row.get("predicates_total"),
                tokens_total=int(row.get("tokens_total") or 0),
                cost_usd=None if math.isnan(costs[i]) else float(costs[i]),
                duration_s=float(row.get("duration_s") or 0.0),
                termination=str(row.get("termination") or ""),
                predicates=_predicates(trial),
            )
        )
    return out


def _predicates(trial: dict[str, Any]) -> tuple[Predicate, ...]:
    metadata = (trial.get("verifier") or {}).get("metadata") or {}
    return tuple(
        Predicate(str(p.get("label", "")), str(p.get("group", "")), bool(p.get("passed")))
        for p in metadata.get("predicates") or ()
        if isinstance(p, dict)
    )
