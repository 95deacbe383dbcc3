"""The flat trial row: one line per trial, the unit of every table and statistic.

Its first columns are exactly the published ``published-trials.parquet`` columns (same
names, order and Arrow types) so a published table and ours concatenate; our own
columns follow. ``ROW_SCHEMA`` is derived from the ``TrialRow`` dataclass, and a test
keeps the two and ``record_to_row`` in step (docs/design/041-prices-and-rows.md).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from apiflow.results.record import HARNESS_OUTCOMES, TrialRecord

PUBLISHED_COLUMNS = (
    "model", "model_api", "panel", "task_id", "world", "kind", "length", "trial", "epoch",
    "verdict", "passed", "g1_passed", "g2_passed", "abstained", "predicates_passed", "predicates_total",
    "partial_score", "tokens_input", "tokens_output", "tokens_cache", "tokens_total", "duration_s",
    "n_tool_calls", "n_messages",
)  # fmt: skip

DEFAULT_PANEL = "apiflow"

_TASK_SHAPE = re.compile(r"-(?P<world>w\d{2})-(?:sub(?P<sub>\d{2})|chain-1to(?P<len>\d{2}))$")
_ABSTAINED_PREFIX = "agent abstained ("

SERVED_SEPARATOR = ", "
"""Joins a trial's served values in its ``served`` column (``served_values`` splits them)."""


@dataclass(frozen=True, slots=True)
class TrialRow:
    """One trial, flattened. ``None`` marks a value the trial does not have (unscored, harness outcome)."""

    # --- the published columns, in the published order ---
    model: str
    model_api: str
    panel: str
    task_id: str
    world: str
    kind: str
    length: int
    trial: int
    epoch: int
    verdict: str
    passed: bool | None
    g1_passed: bool | None
    g2_passed: bool | None
    abstained: str | None
    predicates_passed: int | None
    predicates_total: int | None
    partial_score: float | None
    tokens_input: int
    tokens_output: int
    tokens_cache: int
    tokens_total: int
    duration_s: float
    n_tool_calls: int
    n_messages: int
    # --- apiflow's own columns ---
    trial_id: str
    run_id: str
    schema_version: str
    bank: str
    bank_hash: str
    seed: int
    termination: str
    harness: bool
    limit: str | None
    failure_reason: str
    harness_error: str | None
    tokens_cache_read: int
    tokens_cache_write: int
    tokens_reasoning: int
    cost_usd: float | None
    provider_cost_usd: float | None
    price_table: str
    model_calls: int
    tool_errors: int
    parse_errors: int
    retries: int
    retry_wait_s: float
    grader: str | None
    agent_version: str
    tool_schema_hash: str
    created: str
    served: str | None
    """What the provider said served the trial's calls: its distinct ``model@fingerprint`` values
    (``SERVED_SEPARATOR``-joined, sorted); None when no call named one (offline models)."""


_ARROW_TYPES: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
}


def _arrow_type(annotation: Any) -> pa.DataType:
    if isinstance(annotation, types.UnionType):  # ``X | None``: Arrow columns are nullable anyway
        (inner,) = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _ARROW_TYPES[inner]
    return _ARROW_TYPES[annotation]


def _derive_schema() -> pa.Schema:
    hints = typing.get_type_hints(TrialRow)
    return pa.schema([pa.field(f.name, _arrow_type(hints[f.name])) for f in dataclasses.fields(TrialRow)])


ROW_SCHEMA: pa.Schema = _derive_schema()
"""Arrow schema of a trial row, derived from ``TrialRow``."""

ROW_COLUMNS: tuple[str, ...] = tuple(ROW_SCHEMA.names)


def task_shape(task_id: str) -> tuple[str, str, int]:
    """``(world, kind, length)`` read off a task id (``…-wNN-subMM`` / ``…-wNN-chain-1toKK``).

    ``length`` is the sub index for a solo task and K for a chain, as in the published table.
    """
    match = _TASK_SHAPE.search(task_id)
    if match is None:
        raise ValueError(f"task id {task_id!r} is not <bank>-wNN-subMM or <bank>-wNN-chain-1toKK")
    if match["len"] is not None:
        return match["world"], "chain", int(match["len"])
    return match["world"], "solo", int(match["sub"])


def _published_part(trial: dict[str, Any], panel: str, abstained: str | None) -> dict[str, Any]:
    """The 24 published columns from the schema-1.0 fields of a trial (a dict view)."""
    world, kind, length = task_shape(trial["task_id"])
    verifier = trial.get("verifier") or {}
    metadata = verifier.get("metadata") or {}
    sub = metadata.get("sub_predicates") or {}
    tokens = trial["tokens"]
    messages = trial["messages"]
    return {
        "model": trial["model"],
        "model_api": trial["model_api"],
        "panel": panel,
        "task_id": trial["task_id"],
        "world": world,
        "kind": kind,
        "length": length,
        "trial": trial["trial"],
        "epoch": trial["epoch"],
        "verdict": trial["verdict"],
        "passed": trial["passed"],
        "g1_passed": sub.get("g1_passed"),
        "g2_passed": sub.get("g2_passed"),
        "abstained": abstained,
        "predicates_passed": sub.get("predicates_passed"),
        "predicates_total": sub.get("predicates_total"),
        "partial_score": metadata.get("partial_score"),
        "tokens_input": tokens["input"],
        "tokens_output": tokens["output"],
        "tokens_cache": tokens["cache"],
        "tokens_total": tokens["total"],
        "duration_s": trial["duration_s"],
        "n_tool_calls": sum(len(m.get("tool_calls") or ()) for m in messages if m.get("role") == "assistant"),
        "n_messages": len(messages),
    }


def _abstained_from_explanation(verifier: dict[str, Any] | None) -> str | None:
    # The published table's ``abstained`` is what the verifier said: "agent abstained (<tool>): ...".
    explanation = (verifier or {}).get("explanation") or ""
    if explanation.startswith(_ABSTAINED_PREFIX):
        return explanation[len(_ABSTAINED_PREFIX) :].split(")", 1)[0]
    return None


def published_row(trial_json: dict[str, Any], panel: str = DEFAULT_PANEL) -> dict[str, Any]:
    """The published columns of a schema-1.0 trial JSON (a published transcript or ours).

    Args:
        trial_json: The parsed trial file.
        panel: Panel label to put in the ``panel`` column.

    Returns:
        A dict with exactly ``PUBLISHED_COLUMNS`` as keys.
    """
    view = dict(trial_json, epoch=trial_json["provenance"]["epoch"])
    return _published_part(view, panel, _abstained_from_explanation(trial_json.get("verifier")))


def record_to_row(
    record: TrialRecord, *, panel: str = DEFAULT_PANEL, price_table: str = ""
) -> dict[str, Any]:
    """Flatten a trial record into a row with exactly ``ROW_COLUMNS`` as keys.

    Args:
        record: The trial.
        panel: Panel label (the grid name for our runs).
        price_table: Version of the price table ``record.apiflow.cost_usd`` was computed with.
    """
    block = record.apiflow
    view = {
        "model": record.model,
        "model_api": record.model_api,
        "task_id": record.task_id,
        "trial": record.trial,
        "epoch": record.provenance.epoch,
        "verdict": record.verdict,
        "passed": record.passed,
        "verifier": record.verifier,
        "tokens": record.tokens.model_dump(),
        "duration_s": record.duration_s,
        "messages": record.messages,
    }
    abstained = _abstained_from_explanation(record.verifier)
    row = _published_part(view, panel, abstained)
    row.update(
        trial_id=block.trial_id,
        run_id=record.provenance.run_id,
        schema_version=record.schema_version,
        bank=block.bank,
        bank_hash=block.bank_hash,
        seed=block.seed,
        termination=str(block.termination),
        harness=block.termination in HARNESS_OUTCOMES,
        limit=block.limit,
        failure_reason=record.failure_reason,
        harness_error=block.harness_error,
        tokens_cache_read=block.tokens.cache_read,
        tokens_cache_write=block.tokens.cache_write,
        tokens_reasoning=block.tokens.reasoning,
        cost_usd=block.cost_usd,
        provider_cost_usd=block.provider_cost_usd,
        price_table=price_table,
        model_calls=block.model_calls,
        tool_errors=block.tool_errors,
        parse_errors=block.parse_errors,
        retries=len(block.retries),
        retry_wait_s=round(sum(float(r.get("wait_s", 0.0) or 0.0) for r in block.retries), 6),
        grader=block.grader,
        agent_version=block.agent_version,
        tool_schema_hash=block.tool_schema_hash,
        created=record.provenance.created,
        served=served_text(block.served),
    )
    return row


def served_text(served: list[list[str]]) -> str | None:
    """A trial's ``served`` column: its calls' distinct ``model@fingerprint`` (``model`` when the provider
    named no fingerprint), sorted and joined; None when no call named either.

    Per trial, not per call: the report compares the trials of a cell, and a request id is per call.
    """
    values: set[str] = set()
    for entry in served:  # ``[model, fingerprint, request id, tier?]``; a short entry from an old file is padded
        model, fingerprint = [*entry, "", ""][:2]
        values.add(f"{model}@{fingerprint}" if fingerprint else model)
    values.discard("")
    return SERVED_SEPARATOR.join(sorted(values)) or None


def served_values(text: str | None) -> list[str]:
    """The values a ``served`` column holds (``served_text`` read back)."""
    return [v for v in (text or "").split(SERVED_SEPARATOR) if v]


def rows_to_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (``record_to_row`` dicts) as an Arrow table with ``ROW_SCHEMA``."""
    return pa.Table.from_pylist(rows, schema=ROW_SCHEMA)
