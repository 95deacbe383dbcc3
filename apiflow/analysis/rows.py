"""One flat row per trial from a schema-1.0 trial JSON (published or ours).

The first 24 columns are the published table's (``published-trials.parquet``); how each is
derived is written next to it and in docs/design/050-analysis-conventions.md. A record of
ours (it carries the trailing ``apiflow`` block) adds the harness-accounting columns.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from apiflow.analysis.panels import panel_of
from apiflow.results.record import TrialRecord
from apiflow.results.rows import DEFAULT_PANEL, ROW_SCHEMA, record_to_row
from apiflow.results.taskid import parse_task_id

PUBLISHED_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("model_api", pa.string()),
        ("panel", pa.string()),
        ("task_id", pa.string()),
        ("world", pa.string()),
        ("kind", pa.string()),
        ("length", pa.int64()),
        ("trial", pa.int64()),
        ("epoch", pa.int64()),
        ("verdict", pa.string()),
        ("passed", pa.bool_()),
        ("g1_passed", pa.bool_()),
        ("g2_passed", pa.bool_()),
        ("abstained", pa.string()),
        ("predicates_passed", pa.int64()),
        ("predicates_total", pa.int64()),
        ("partial_score", pa.float64()),
        ("tokens_input", pa.int64()),
        ("tokens_output", pa.int64()),
        ("tokens_cache", pa.int64()),
        ("tokens_total", pa.int64()),
        ("duration_s", pa.float64()),
        ("n_tool_calls", pa.int64()),
        ("n_messages", pa.int64()),
    ]
)

# Our own records flatten through the grid's row (same columns as the grid's Parquet rows).
OURS_SCHEMA = ROW_SCHEMA

# "agent abstained (report_blocked): '<reason>'" — the only place the published files name the abstention.
_ABSTAINED = re.compile(r"^agent abstained \((?P<how>clarify|report_blocked)\)")


def abstention_of(explanation: str | None) -> str | None:
    """``clarify`` / ``report_blocked`` when the verifier explanation records an abstention, else None."""
    if not explanation:
        return None
    match = _ABSTAINED.match(explanation)
    return match["how"] if match else None


def _count_tool_calls(messages: list[dict[str, Any]]) -> int:
    # Every tool call the model issued (parallel calls count one each), not the verifier's
    # ``tool_call_count``, which leaves out calls that never reached a tool.
    return sum(len(m.get("tool_calls") or ()) for m in messages if m.get("role") == "assistant")


def transcript_row(trial: dict[str, Any]) -> dict[str, Any]:
    """The published-table row of one parsed trial JSON; a record of ours gives the grid's full row.

    Unscored trials (``verifier`` null) get null grading columns, as published.
    """
    if "apiflow" in trial:
        return record_to_row(TrialRecord.model_validate(trial), panel=DEFAULT_PANEL)
    ref = parse_task_id(trial["task_id"])
    verifier = trial.get("verifier") or {}
    metadata = verifier.get("metadata") or {}
    grading = metadata.get("sub_predicates") or {}
    tokens = trial.get("tokens") or {}
    messages = trial.get("messages") or []
    row: dict[str, Any] = {
        "model": trial["model"],
        "model_api": trial.get("model_api"),
        "panel": panel_of(trial["model"]),
        "task_id": trial["task_id"],
        "world": ref.world,
        "kind": ref.kind,
        "length": ref.length,
        "trial": trial["trial"],
        "epoch": (trial.get("provenance") or {}).get("epoch"),
        "verdict": trial.get("verdict", ""),
        "passed": trial.get("passed"),
        "g1_passed": grading.get("g1_passed"),
        "g2_passed": grading.get("g2_passed"),
        "abstained": abstention_of(verifier.get("explanation")),
        "predicates_passed": grading.get("predicates_passed"),
        "predicates_total": grading.get("predicates_total"),
        "partial_score": metadata.get("partial_score"),
        "tokens_input": tokens.get("input"),
        "tokens_output": tokens.get("output"),
        "tokens_cache": tokens.get("cache"),
        "tokens_total": tokens.get("total"),
        "duration_s": trial.get("duration_s"),
        "n_tool_calls": _count_tool_calls(messages),
        "n_messages": len(messages),
    }
    return row
