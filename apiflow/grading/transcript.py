"""Rebuilding a trial's evidence from a schema-1.0 transcript (its ``messages`` alone).

Only what the tool results prove is taken: a request counts when its ``execute``
returned a response ref (or a network error), a variable when ``write`` reported it
written, a request entity change when ``write``/``edit`` reported success. Responses
come from ``execute`` results (``body_preview``) and from later ``read``s of the
response entity, which carry the full body.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from apiflow.grading.answer import final_message
from apiflow.grading.evidence import (
    UNKNOWN,
    Abstention,
    Ending,
    Evidence,
    Exchange,
    user_texts,
)
from apiflow.grading.refs import loads_json, loads_maybe, parse_ref, ref_key, request_id, response_id

PREVIEW_LIMIT = 600
_ELLIPSIS = "…"


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
    """Replays the tool results of one transcript into workspace-like state.

    An exchange is built once, when its ``execute`` result is replayed; a later ``read`` that
    reveals a cut body replaces it (``_replace``): rare, against one build per request.
    """

    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []
        self.by_response: dict[str, int] = {}  # response id -> position in ``exchanges``
        self.entities: dict[str, Any] = {}
        self.variables: dict[tuple[str, str], Any] = {}
        self.written: set[str] = set()
        self.abstention: Abstention | None = None
        self.tool_calls = 0
        self.responses = 0
        self.task_texts: list[str] = []  # the task text, gathered on the same walk

    def replay(self, messages: list[dict[str, Any]]) -> None:
        """Feed every tool call with its result, exactly as ``_tool_calls`` pairs them.

        The pairing is written out here (a regrade replays every call of every file): a result
        that answers the first waiting call by id, the common case, takes it without a search.
        """
        waiting: list[dict[str, Any]] = []
        for message in messages:
            role = message.get("role")
            if role == "tool":
                if not waiting:
                    continue  # nothing to answer
                call_id = message.get("tool_call_id")
                if call_id is not None and waiting[0].get("id") == call_id:
                    call = waiting.pop(0)
                else:
                    found = _take(waiting, message)
                    if found is None:
                        continue
                    call = found
                self.feed(call, message)
            elif role == "assistant":
                self.tool_calls += len(waiting)  # unanswered: counted, nothing else
                calls = message.get("tool_calls")
                waiting = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
            elif role == "user":
                user_texts(message.get("content"), self.task_texts)
        self.tool_calls += len(waiting)

    def feed(self, call: dict[str, Any], result: dict[str, Any] | None) -> None:
        """One tool call and its result message (``None``: unanswered)."""
        self.tool_calls += 1
        if result is None:
            return
        content = result.get("content")
        if result.get("error"):
            return
        text = content if type(content) is str else _result_text(result)
        if text is None:
            return
        name = call.get("name")
        handler = _HANDLERS.get(name) if isinstance(name, str) else None
        if handler is not None:
            args = call.get("arguments")
            handler(self, args if type(args) is dict else _arguments(call), text)
        elif name in ("clarify", "report_blocked") and self.abstention is None:
            self.abstention = _abstention(name, text)

    def _sent_request(self, args: dict[str, Any]) -> dict[str, Any]:
        if "request" in args:
            request = args["request"]
            if type(request) is not dict:
                request = loads_maybe(request)
            return request if isinstance(request, dict) else {}
        target = parse_ref(args.get("target"))
        content = self.entities.get(ref_key(*target)) if target else None
        return dict(content) if isinstance(content, dict) else {}

    def _execute(self, args: dict[str, Any], text: str) -> None:
        result = _loads_object(text)
        if result is None:
            return
        request = self._sent_request(args)
        if "response_ref" in result:
            body, preview = _preview_body(result.get("body_preview"))
            ref = str(result["response_ref"])
            status = result.get("status")
            self.by_response[response_id(ref)] = len(self.exchanges)
            self._sent(
                request,
                status if isinstance(status, int) else None,
                body,
                preview,
                None,
                f"request:{request_id(ref)}",
                ref,
            )
        elif isinstance(result.get("error"), str) and "request_ref" in result:
            self._sent(request, None, None, None, result["error"], str(result["request_ref"]), None)

    def _sent(
        self,
        request: dict[str, Any],
        status: int | None,
        body: Any,
        preview: str | None,
        network_error: str | None,
        request_ref: str,
        response_ref: str | None,
    ) -> None:
        """Record one exchange (``Exchange.sent``)."""
        if status is not None:
            self.responses += 1
        self.exchanges.append(
            Exchange.sent(
                len(self.exchanges), request, status, body, preview, network_error, request_ref, response_ref
            )
        )
        # An inline execute creates a request entity later executions may target.
        self.entities.setdefault(request_ref, request)

    def _read(self, args: dict[str, Any], text: str) -> None:
        given = args.get("entity_ref")
        if type(given) is str and "response" not in given and "\\" not in given:
            # Most reads are of the spec or a variable. A response ref names its kind in the text:
            # ``response:…`` or ``"kind": "response"`` (only a JSON escape could hide it, and that
            # needs a backslash), so this one is not, and ``parse_ref`` need not parse it.
            return
        ref = parse_ref(given)
        if not ref or ref[0] != "response":
            return
        position = self.by_response.get(ref[1])
        if position is None:
            return
        item = self.exchanges[position]
        if item.response_body is not UNKNOWN:
            return
        payload = loads_maybe(text)
        content = payload.get("content") if isinstance(payload, dict) else None
        if isinstance(content, dict) and "body" in content:
            self.exchanges[position] = item._replace(response_body=content["body"], preview=None)

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


# The tools whose results change the evidence (the others only count as calls).
_HANDLERS = {
    "execute": _Builder._execute,
    "read": _Builder._read,
    "write": _Builder._write,
    "edit": _Builder._edit,
}


def _loads_object(text: str) -> dict[str, Any] | None:
    """``loads_maybe(text)`` when that is an object, else ``None``; orjson straight on the text first.

    JSON allows the whitespace ``loads_maybe`` strips, so when the text parses as it is, stripping
    changes nothing; only when it does not (or is not an object) does the general path run.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = loads_maybe(text)
    return value if isinstance(value, dict) else None


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
    builder.replay(messages)
    return {e.response_ref: e.preview for e in builder.exchanges if e.response_ref and e.preview is not None}


def evidence_from_transcript(trial_json: Mapping[str, Any]) -> Evidence:
    """Rebuild the evidence of one published (schema-1.0) trial from its messages.

    Args:
        trial_json: The parsed trial file (only ``messages`` is read).

    Returns:
        The evidence; responses seen only through a cut preview and never read have
        ``response_body`` ``UNKNOWN``.
    """
    messages = [m for m in trial_json.get("messages") or () if type(m) is dict or isinstance(m, dict)]
    builder = _Builder()
    builder.replay(messages)
    exchanges = tuple(builder.exchanges)
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
        new_response_count=builder.responses,
        new_variable_count=len(builder.variables),
        task_text="\n".join(builder.task_texts),
    )
