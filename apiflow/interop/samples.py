"""One trial record (schema-1.0 JSON) <-> one Inspect AI ``EvalSample`` (JSON), both ways.

Sample ``id`` is the task id and ``epoch`` the record's ``trial`` (unique per model and task,
which Inspect requires of (id, epoch); the published ``provenance.epoch`` is not). The verdict
is the score's value — ``"C"``/``"I"`` are Inspect's own ``CORRECT``/``INCORRECT`` — with the
verifier's explanation (``failure_reason``) and its metadata (G1/G2 predicates) on the score.
An unscored trial (``verdict ""``: a harness or provider fault) gets no score and a sample
``error`` instead, so Inspect never counts it as incorrect. Every record field that has no
Inspect place travels in ``metadata["record"]``, which is what the way back reads
(docs/design/082-inspect-interop.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

from apiflow.interop.messages import messages_from_inspect, messages_to_inspect
from apiflow.results.taskid import check_task_id

RECORD_KEY: Final = "record"
"""Sample metadata key holding the record's fields other than messages (and the verifier)."""

DEFAULT_SCORER: Final = "apiflow_grader"
ANSWER_CHARS: Final = 2000  # of the final text, shown as the score's answer (the full text is in output)
_HARNESS: Final = frozenset({"provider_error", "harness_error"})
# Our limit names -> Inspect's closed EvalSampleLimit.type set.
_LIMIT_TYPES: Final = {"messages": "message", "time": "time", "tokens": "token"}


def sample_name(task_id: str, trial: int) -> str:
    """The zip member holding one sample (Inspect's own naming).

    The task id is the record's, untrusted: one holding ``/``, ``..`` or a control character
    would name a member outside ``samples/`` (a path for whoever unzips the log), so it is refused.

    Raises:
        UsageError: ``task_id`` is no safe name (``check_task_id``).
    """
    return f"samples/{check_task_id(task_id)}_epoch_{trial}.json"


def _ours(trial: dict[str, Any]) -> dict[str, Any]:
    block = trial.get("apiflow")
    return block if isinstance(block, dict) else {}


def termination_of(trial: dict[str, Any]) -> str | None:
    """Our ``apiflow.termination``; a published record (no block) has none."""
    return _ours(trial).get("termination")


def is_unscored(trial: dict[str, Any]) -> bool:
    """True when the record says nothing about the model: no verdict, or a harness/provider fault."""
    return trial.get("verdict", "") == "" or termination_of(trial) in _HARNESS


def _verifier_from_score(name: str, score: dict[str, Any]) -> dict[str, Any]:
    return {
        "scorer": name,
        "value": score.get("value"),
        "explanation": score.get("explanation"),
        "metadata": score.get("metadata"),
    }


def _grading_flags(verifier: dict[str, Any] | None) -> dict[str, Any]:
    metadata = (verifier or {}).get("metadata") or {}
    sub = metadata.get("sub_predicates") or {}
    return {"g1_passed": sub.get("g1_passed"), "g2_passed": sub.get("g2_passed")}


def _usage(trial: dict[str, Any]) -> dict[str, Any]:
    tokens = trial.get("tokens") or {}
    detail = _ours(trial).get("tokens") or {}
    usage: dict[str, Any] = {
        "input_tokens": int(tokens.get("input") or 0),
        "output_tokens": int(tokens.get("output") or 0),
        "total_tokens": int(tokens.get("total") or 0),
        "input_tokens_cache_read": int(detail.get("cache_read", tokens.get("cache")) or 0),
    }
    if detail:
        usage["input_tokens_cache_write"] = int(detail.get("cache_write") or 0)
        usage["reasoning_tokens"] = int(detail.get("reasoning") or 0)
    cost = _ours(trial).get("cost_usd")
    if isinstance(cost, int | float):
        usage["total_cost"] = float(cost)
    return usage


def _times(trial: dict[str, Any]) -> dict[str, Any]:
    created = (trial.get("provenance") or {}).get("created")
    duration = trial.get("duration_s")
    out: dict[str, Any] = {}
    if isinstance(duration, int | float):
        out["total_time"] = out["working_time"] = float(duration)
    try:
        start = datetime.fromisoformat(str(created))
    except ValueError:
        return out
    if start.tzinfo is None:
        return out  # Inspect wants UTC-aware times; a naive one is left out, not guessed
    out["started_at"] = start.isoformat()
    out["completed_at"] = (start + timedelta(seconds=float(duration or 0))).isoformat()
    return out


def _limit(trial: dict[str, Any], n_messages: int) -> dict[str, Any] | None:
    if termination_of(trial) != "limit":
        return None
    name = str(_ours(trial).get("limit") or "unknown")
    # The record keeps which limit stopped the trial, not its configured value: report the
    # amount reached (which the reason says), the closest figure the record holds.
    reached = {
        "messages": n_messages,
        "tokens": (trial.get("tokens") or {}).get("total", 0),
        "time": trial.get("duration_s", 0),
        "tool_calls": _ours(trial).get("tool_calls", 0),
    }.get(name, 0)
    return {
        "type": _LIMIT_TYPES.get(name, "custom"),
        "limit": float(reached or 0),
        "reason": f"apiflow limit {name!r} reached (value = amount reached at the stop)",
    }


def _error(trial: dict[str, Any]) -> dict[str, Any]:
    termination = termination_of(trial)
    if termination:
        message = f"unscored ({termination}): {_ours(trial).get('harness_error') or 'no verdict'}"
    else:
        message = "unscored: no verdict recorded (verifier null)"
    return {"message": message, "traceback": "", "traceback_ansi": ""}


def _output(model: str, converted: list[dict[str, Any]], trial: dict[str, Any]) -> dict[str, Any]:
    """Inspect's ``output``: the last assistant turn, whose text holds the answer card."""
    last = next((m for m in reversed(converted) if m["role"] == "assistant"), None)
    if last is None:
        return {"model": model, "choices": [], "completion": ""}
    content = last["content"]
    text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    stop = "tool_calls" if last.get("tool_calls") else "stop"
    return {
        "model": model,
        "choices": [{"message": last, "stop_reason": stop}],
        "completion": text,
        "usage": _usage(trial),
    }


def record_to_sample(trial: dict[str, Any]) -> dict[str, Any]:
    """One parsed trial JSON as an Inspect ``EvalSample`` (JSON-ready dict)."""
    messages = trial.get("messages") or []
    model = str(trial.get("model_api") or trial.get("model") or "")
    uuid = _ours(trial).get("trial_id") or f"{trial.get('model')}/{trial['task_id']}/t{trial['trial']}"
    converted = messages_to_inspect(messages, uuid, model)
    verifier = trial.get("verifier")
    rest = {k: v for k, v in trial.items() if k not in ("messages", "verifier")}
    output = _output(model, converted, trial)
    scores = None
    if isinstance(verifier, dict):
        name = str(verifier.get("scorer") or DEFAULT_SCORER)
        value = verifier.get("value")
        score: dict[str, Any] = {
            "value": value if isinstance(value, str | int | float | bool) else "",
            "answer": output["completion"][:ANSWER_CHARS],  # the viewer's ANSWER column
            "history": [],
        }
        for key in ("explanation", "metadata"):
            if verifier.get(key) is not None:
                score[key] = verifier[key]
        scores = {name: score}
        if _verifier_from_score(name, score) != verifier:
            rest["verifier"] = verifier  # not expressible as a Score: kept verbatim
    elif verifier is not None:
        rest["verifier"] = verifier
    user = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), {})
    sample: dict[str, Any] = {
        "id": trial["task_id"],
        "epoch": int(trial["trial"]),
        "input": user.get("content") if isinstance(user.get("content"), str) else "",
        "target": "",
        "messages": converted,
        "output": output,
        "scores": scores,
        "metadata": {
            "trial_id": _ours(trial).get("trial_id"),
            "termination": termination_of(trial),
            **_grading_flags(verifier if isinstance(verifier, dict) else None),
            RECORD_KEY: rest,
        },
        "model_usage": {model: _usage(trial)},
        **_times(trial),
        "uuid": uuid,
    }
    if is_unscored(trial):
        sample["error"] = _error(trial)
    limit = _limit(trial, len(messages))
    if limit is not None:
        sample["limit"] = limit
    return sample


def sample_to_record(sample: dict[str, Any]) -> dict[str, Any]:
    """The trial JSON behind one sample written by the export (key order as in the record).

    Raises:
        ValueError: the sample carries no ``metadata.record`` (not written by the export).
    """
    rest = (sample.get("metadata") or {}).get(RECORD_KEY)
    if not isinstance(rest, dict):
        raise ValueError(
            f"sample {sample.get('id')!r} epoch {sample.get('epoch')}: no apiflow record metadata"
        )
    verifier = rest.get("verifier")
    if "verifier" not in rest:
        scores = sample.get("scores") or {}
        verifier = None
        if scores:
            name, score = next(iter(scores.items()))
            verifier = _verifier_from_score(name, score)
    trial: dict[str, Any] = {}
    for key, value in rest.items():
        if key == "provenance":
            # Published key order: ... duration_s, messages, verifier, provenance, (apiflow)
            trial["messages"] = messages_from_inspect(sample.get("messages") or [])
            trial["verifier"] = verifier
        trial[key] = value
    trial.setdefault("messages", messages_from_inspect(sample.get("messages") or []))
    trial.setdefault("verifier", verifier)
    return trial
