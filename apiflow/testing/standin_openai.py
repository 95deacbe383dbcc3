"""The stand-in's OpenAI chat-completions wire: the checks, conversion and reply of ``/v1/chat/completions``.

``apiflow.testing.standin_server`` owns HTTP, limits and fault dice; this module owns the shape:
what an OpenAI-compatible API refuses in a tool loop (``check_request``), how its messages read as
schema-1.0 messages (``to_schema_messages``) and what a completion looks like (``render_completion``).
The Anthropic and Responses wires live beside it (``standin_anthropic``, ``standin_responses``).
"""

from __future__ import annotations

import json
from typing import Any

from apiflow.models.base import ToolCall, Usage
from apiflow.testing.standin_anthropic import Rejected

CHARS_PER_TOKEN = 4
"""The stand-in's token estimate for text it invents (reasoning) and for what it is sent."""


class ServerFault(Rejected):
    """A request an OpenAI-compatible server fails with HTTP 500 rather than a 400 (its own bug)."""


SERVED_TIER_KEY = "standin_served_tier"
"""A request's ``metadata`` key naming the tier the stand-in says it served (``served_tier``)."""


def served_tier(body: dict[str, Any]) -> str:
    """The ``service_tier`` an OpenAI reply names, on Chat Completions and the Responses API alike.

    As OpenAI answers: a request's ``flex`` or ``priority`` echoed, anything else served at
    ``default`` (its name for the standard tier). ``metadata.standin_served_tier`` (sent through
    litellm's ``extra_body``; OpenAI keeps metadata and serves by it nothing) names another tier, as
    OpenAI does when it serves another than asked (priority past its ramp rate is served at default),
    so a test can check that the served tier, not the asked one, prices the call.
    """
    metadata = body.get("metadata")
    forced = metadata.get(SERVED_TIER_KEY) if isinstance(metadata, dict) else None
    if isinstance(forced, str) and forced:
        return forced
    asked = body.get("service_tier")
    return asked if asked in ("flex", "priority") else "default"


def error_body(kind: str, message: str) -> dict[str, Any]:
    """OpenAI's error shape."""
    return {"error": {"message": message, "type": kind, "code": kind}}


def to_schema_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages -> schema-1.0 messages (what the offline models read)."""
    converted = []
    for m in messages:
        if m["role"] == "assistant":
            calls = []
            for c in m.get("tool_calls") or ():
                raw = c["function"].get("arguments") or ""
                try:
                    args: Any = json.loads(raw) if raw else {}
                except ValueError:
                    args = raw
                calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args})
            item: dict[str, Any] = {"role": "assistant", "content": m.get("content") or ""}
            if calls:
                item["tool_calls"] = calls
            converted.append(item)
        elif m["role"] == "tool":
            converted.append(
                {"role": "tool", "content": m.get("content") or "", "tool_call_id": m.get("tool_call_id")}
            )
        else:
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
            converted.append({"role": m["role"], "content": content or ""})
    return converted


def check_request(messages: list[dict[str, Any]], reasoning: bool, require_content: bool = False) -> None:
    """Refuse what OpenAI-compatible APIs refuse in a tool loop.

    Every tool message answers a call of the assistant turn before it, every call is answered
    before the next non-tool message, and (``reasoning``: open-weight reasoning models such as
    DeepSeek's thinking mode) each assistant turn with tool calls comes back with its
    ``reasoning_content``. With ``require_content``, a message without a ``content`` key fails as
    it does on llama-cpp-python's server (its ``chatml-function-calling`` template reads every
    message's content): OpenAI accepts such a turn, some compatible servers do not.

    Raises:
        Rejected: With the kind of message those APIs send.
        ServerFault: ``require_content`` and a message lacks ``content`` (llama-cpp's HTTP 500).
    """
    pending: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if require_content and "content" not in message:
            raise ServerFault("'dict object' has no attribute 'content'")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                raise Rejected(
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    f"message with 'tool_calls' (messages.[{index}].tool_call_id)."
                )
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            raise Rejected(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to "
                f"each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{', '.join(sorted(pending))}"
            )
        calls = message.get("tool_calls") or () if role == "assistant" else ()
        if calls and reasoning and not message.get("reasoning_content"):
            raise Rejected(
                f"Missing `reasoning_content` field in the assistant message at message index {index}. "
                "In thinking mode, the reasoning_content of assistant turns with tool calls must be "
                "passed back."
            )
        pending = {str(c.get("id")) for c in calls}


def wire_calls(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    """Tool calls in OpenAI's shape (arguments as JSON text)."""
    return [
        {"id": tc.id, "type": "function",
         "function": {"name": tc.name, "arguments": tc.arguments if isinstance(tc.arguments, str)
                      else json.dumps(tc.arguments, ensure_ascii=False)}}
        for tc in calls
    ]  # fmt: skip


def render_completion(
    model: str,
    text: str,
    calls: list[dict[str, Any]],
    usage: Usage,
    reasoning: str | None = None,
    service_tier: str | None = None,
) -> dict[str, Any]:
    """A chat completion; ``reasoning`` adds ``reasoning_content`` and counts its tokens as
    OpenAI does (inside ``completion_tokens``, again in ``reasoning_tokens``). ``service_tier``
    (``served_tier`` of the request) is the tier the reply says it served; None leaves it out."""
    prompt = usage.input + usage.cache_read
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    spent = len(reasoning) // CHARS_PER_TOKEN if reasoning else 0
    completion = usage.output + spent
    served = {"service_tier": service_tier} if service_tier is not None else {}
    return {
        **served,
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "system_fingerprint": "fp_standin",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read},
            "completion_tokens_details": {"reasoning_tokens": spent},
        },
    }
