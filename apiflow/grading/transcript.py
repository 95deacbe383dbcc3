"""Rebuilding a trial's evidence from a schema-1.0 transcript (its ``messages`` alone).

Only what the tool results prove is taken: a request counts when its ``execute``
returned a response ref (or a network error), a variable when ``write`` reported it
written, a request entity change when ``write``/``edit`` reported success. Responses
come from ``execute`` results (``body_preview``) and from later ``read``s of the
response entity, which carry the full body.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from apiflow.grading.answer import final_message
from apiflow.grading.evidence import (
    UNKNOWN,
    Abstention,
    Ending,
    Evidence,
    Exchange,
    task_text_of,
)
from apiflow.grading.refs import loads_json, loads_maybe, parse_ref, ref_key, request_id, response_id

PREVIEW_LIMIT = 600
_ELLIPSIS = "…"


@dataclass(slots=True)
class _Pending:
    """An exchange under construction (its body may still be revealed by a ``read``)."""

    request: dict[str, Any]
    status: int | None
    body: Any
    preview: str | None
    network_error: str | None
    request_ref: str
    response_ref: str | None


def _take(waiting: list[dict[str, Any]], result: Mapping[str, Any]) -> dict[str, Any] | None:
    """Remove and return the waiting call a tool result answers: by id, else by tool name."""
    call_id = result.get("tool_call_id")
    if call_id is not None:
        for i, call in enumerate(waiting):
            if call.get("id") == call_id:
                return waiting.pop(i)
    function = result.get("function")
    if function is not None:
        for i, call in enumerate(waiting):
            if call.get("name") == function:
                return waiting.pop(i)
    return None


def _tool_calls(messages: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Each tool call with its result message, in result order; unanswered calls with ``None``.

    Results are paired with the calls of the assistant turn they answer, by id (repeated or
    missing ids fall back to the tool name, first come first served).
    """
    waiting: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if waiting:  # nothing to answer otherwise
                call = _take(waiting, message)
                if call is not None:
                    yield call, message
        elif role == "assistant":
            for call in waiting:
                yield call, None
            calls = message.get("tool_calls")
            waiting = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    for call in waiting:
        yield call, None


def _result_text(result: Mapping[str, Any]) -> str | None:
    """The successful result text of a tool call; ``None`` when the tool reported an error."""
    if result.get("error"):
        return None
    content = result.get("content")
    if isinstance(content, list):
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else None


def _arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    args = loads_maybe(call.get("arguments"))
    return args if isinstance(args, dict) else {}


def _preview_body(preview: Any) -> tuple[Any, str | None]:
    """Parsed body of a complete preview, or ``(UNKNOWN, preview)`` for a cut one."""
    if not isinstance(preview, str):
        return preview, None
    if len(preview) == PREVIEW_LIMIT + 1 and preview.endswith(_ELLIPSIS):
        return UNKNOWN, preview
    return loads_json(preview, preview), None


def _abstention(name: str, text: str) -> Abstention:
    prefix = f"trial terminated ({name}): "
    reason = text[len(prefix) :] if text.startswith(prefix) else text
    return Abstention(name, reason)  # type: ignore[arg-type]


def abstention_in(messages: list[dict[str, Any]]) -> tuple[Abstention | None, int]:
    """The first ``clarify``/``report_blocked`` call that got a result, and the number of tool calls."""
    found: Abstention | None = None
    calls = 0
    for call, result in _tool_calls(messages):
        calls += 1
        name = call.get("name")
        if found is None and name in ("clarify", "report_blocked") and result is not None:
            text = _result_text(result)
            if text is not None:
                found = _abstention(str(name), text)
    return found, calls


class _Builder:
    """Replays the tool results of one transcript into workspace-like state."""

    def __init__(self) -> None:
        self.pending: list[_Pending] = []
        self.by_response: dict[str, _Pending] = {}
        self.entities: dict[str, Any] = {}
        self.variables: dict[tuple[str, str], Any] = {}
        self.written: set[str] = set()
        self.abstention: Abstention | None = None
        self.tool_calls = 0

    def feed(self, call: dict[str, Any], result: dict[str, Any] | None) -> None:
        self.tool_calls += 1
        text = _result_text(result) if result is not None else None
        if text is None:
            return
        name = call.get("name")
        handler = _HANDLERS.get(name) if isinstance(name, str) else None
        if handler is not None:
            handler(self, _arguments(call), text)
        elif name in ("clarify", "report_blocked") and self.abstention is None:
            self.abstention = _abstention(name, text)

    def _sent_request(self, args: dict[str, Any]) -> dict[str, Any]:
        if "request" in args:
            request = loads_maybe(args["request"])
            return request if isinstance(request, dict) else {}
        target = parse_ref(args.get("target"))
        content = self.entities.get(ref_key(*target)) if target else None
        return dict(content) if isinstance(content, dict) else {}

    def _execute(self, args: dict[str, Any], text: str) -> None:
        result = loads_maybe(text)
        if not isinstance(result, dict):
            return
        request = self._sent_request(args)
        if "response_ref" in result:
            body, preview = _preview_body(result.get("body_preview"))
            ref = str(result["response_ref"])
            status = result.get("status")
            item = _Pending(
                request,
                status if isinstance(status, int) else None,
                body,
                preview,
                None,
                f"request:{request_id(ref)}",
                ref,
            )
            self.by_response[response_id(ref)] = item
        elif isinstance(result.get("error"), str) and "request_ref" in result:
            ref = str(result["request_ref"])
            item = _Pending(request, None, None, None, result["error"], ref, None)
        else:
            return
        self.pending.append(item)
        # An inline execute creates a request entity later executions may target.
        self.entities.setdefault(item.request_ref, request)

    def _read(self, args: dict[str, Any], text: str) -> None:
        ref = parse_ref(args.get("entity_ref"))
        if not ref or ref[0] != "response":
            return
        item = self.by_response.get(ref[1])
        if item is None or item.body is not UNKNOWN:
            return
        payload = loads_maybe(text)
        content = payload.get("content") if isinstance(payload, dict) else None
        if isinstance(content, dict) and "body" in content:
            item.body, item.preview = content["body"], None

    def _write(self, args: dict[str, Any], text: str) -> None:
        ref = parse_ref(args.get("entity_ref"))
        content = loads_maybe(args.get("content"))
        if not ref or not isinstance(content, dict):
            return
        kind, name = ref
        if kind == "variable" and text.startswith("variable ") and text.endswith(" written"):
            written = text[len("variable ") : -len(" written")]
            scope = written[: -len(name) - 1] if written.endswith(":" + name) else written.partition(":")[0]
            self.variables[(scope, name)] = content.get("value")
        elif text.startswith("entity ") and text.endswith(" written"):
            self.entities[ref_key(kind, name)] = content
            self.written.add(ref_key(kind, name))

    def _edit(self, args: dict[str, Any], text: str) -> None:
        ref = parse_ref(args.get("entity_ref"))
        patch = loads_maybe(args.get("patch"))
        if not ref or not isinstance(patch, dict) or " edited" not in text:
            return
        key = ref_key(*ref)
        current = self.entities.get(key)
        self.entities[key] = {**(current if isinstance(current, dict) else {}), **patch}
        self.written.add(key)

    def exchanges(self) -> tuple[Exchange, ...]:
        return tuple(_freeze(i, item) for i, item in enumerate(self.pending))


# The tools whose results change the evidence (the others only count as calls).
_HANDLERS = {
    "execute": _Builder._execute,
    "read": _Builder._read,
    "write": _Builder._write,
    "edit": _Builder._edit,
}


def _freeze(index: int, item: _Pending) -> Exchange:
    """``Exchange.sent`` of one replayed exchange."""
    return Exchange.sent(
        index,
        item.request,
        item.status,
        item.body,
        item.preview,
        item.network_error,
        item.request_ref,
        item.response_ref,
    )


def ending_of(messages: list[dict[str, Any]], abstention: Abstention | None, text: str) -> Ending:
    """How the trial ended, read off its last message."""
    if abstention is not None:
        return abstention.kind
    last = messages[-1] if messages else {}
    if last.get("role") == "tool" or (last.get("role") == "assistant" and last.get("tool_calls")):
        return "limit"
    return "answered" if text.strip() else "no_answer"


def cut_previews(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Response ref -> cut preview, for responses the agent saw only through a cut preview."""
    builder = _Builder()
    for call, result in _tool_calls(messages):
        builder.feed(call, result)
    return {p.response_ref: p.preview for p in builder.pending if p.response_ref and p.preview is not None}


def evidence_from_transcript(trial_json: Mapping[str, Any]) -> Evidence:
    """Rebuild the evidence of one published (schema-1.0) trial from its messages.

    Args:
        trial_json: The parsed trial file (only ``messages`` is read).

    Returns:
        The evidence; responses seen only through a cut preview and never read have
        ``response_body`` ``UNKNOWN``.
    """
    messages = [m for m in trial_json.get("messages") or () if isinstance(m, dict)]
    builder = _Builder()
    for call, result in _tool_calls(messages):
        builder.feed(call, result)
    exchanges = builder.exchanges()
    text, reasoning = final_message(messages)
    return Evidence(
        exchanges=exchanges,
        variables=builder.variables,
        entities={k: v for k, v in builder.entities.items() if k in builder.written},
        answer_text=text,
        answer_reasoning=reasoning,
        abstention=builder.abstention,
        ending=ending_of(messages, builder.abstention, text),
        tool_call_count=builder.tool_calls,
        new_response_count=sum(1 for e in exchanges if e.has_response),
        new_variable_count=len(builder.variables),
        task_text=task_text_of(messages),
    )
