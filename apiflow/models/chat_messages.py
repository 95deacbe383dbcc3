"""Schema-1.0 messages to the OpenAI chat format and a litellm response back, for the litellm adapter.

litellm takes OpenAI chat messages for every provider, so one conversion serves them all; what each
provider needs back with a turn (signatures, reasoning items) is attached from the adapter's
``ReplayState`` (docs/design/046-provider-fidelity.md). Imports no litellm: it reads litellm's
objects by field name (``provider_fields.get_field``), so the adapter stays litellm's one importer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from apiflow.models.base import ModelOutput, ToolCall
from apiflow.models.provider_fields import (
    ReplayState,
    get_field,
    reasoning_text,
    request_id,
    served_tier,
    usage_from_response,
)

SERVED_CHARS = 200
"""Characters kept of each served field (model id, fingerprint, request id)."""


# -- schema 1.0 -> OpenAI ------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or () if b.get("type") == "text")


def _openai_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    args = call["arguments"]
    encoded = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": encoded}}


def to_openai_messages(
    messages: list[dict[str, Any]],
    replay: Sequence[ReplayState | None] = (),
    empty_text: str | None = None,
) -> list[dict[str, Any]]:
    """Schema-1.0 transcript -> OpenAI chat messages (litellm's input shape for every provider).

    ``replay[n]`` is sent back with the n-th assistant message: its reasoning state as the provider
    returned it. Without it, a reasoning block of the record is not replayed (its text alone is no
    valid input for any provider: signatures and encrypted content are not in the record). A failed
    tool call's result is its error message, so the model sees what went wrong. ``empty_text`` is
    the content of an assistant turn without text (the adapter's ``empty_text_for`` the route).
    """
    converted: list[dict[str, Any]] = []
    turn = 0
    for message in messages:
        role = message["role"]
        if role == "assistant":
            text = _text_of(message["content"]) or empty_text
            item: dict[str, Any] = {"role": "assistant", "content": text}
            if message.get("tool_calls"):
                item["tool_calls"] = [_openai_tool_call(c) for c in message["tool_calls"]]
            state = replay[turn] if turn < len(replay) else None
            if state is not None:
                _attach(item, state)
            turn += 1
            converted.append(item)
        elif role == "tool":
            error = message.get("error")
            content = error["message"] if error else message["content"]
            converted.append({"role": "tool", "tool_call_id": message["tool_call_id"], "content": content})
        else:
            converted.append({"role": role, "content": _text_of(message["content"])})
    return converted


def _attach(item: dict[str, Any], state: ReplayState) -> None:
    item.update(state.fields)
    for call, extra in zip(item.get("tool_calls") or (), state.call_fields, strict=False):
        if extra:
            call["provider_specific_fields"] = extra
    for call, raw in zip(item.get("tool_calls") or (), state.arguments, strict=False):
        sent = call["function"]["arguments"]
        if raw is not None and raw != sent and parse_arguments(raw) == parse_arguments(sent):
            call["function"]["arguments"] = raw  # the provider's own bytes; a repaired call keeps ours


# -- OpenAI -> schema 1.0 ------------------------------------------------------------------------


def parse_arguments(raw: str | None) -> dict[str, Any] | str:
    """Tool-call arguments as a dict when they are a JSON object, else the raw text.

    The raw text goes to the toolbox, which returns a ``parsing`` tool error the model can react
    to; the loop counts it. The only repair is an absent/empty string, read as ``{}``.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        return raw  # not text at all: the loop's intake records and refuses it as arguments_type
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # nested past the recursion limit: raw text, bounded by the toolbox
        return raw
    return value if isinstance(value, dict) else raw


def output_from_response(response: Any) -> ModelOutput:
    """A litellm ``ModelResponse`` -> ``ModelOutput`` (first choice)."""
    message = response.choices[0].message
    calls = tuple(
        ToolCall(str(c.id), str(c.function.name), parse_arguments(c.function.arguments))
        for c in (get_field(message, "tool_calls") or ())
    )
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost")
    served = (
        str(get_field(response, "model") or "")[:SERVED_CHARS],
        str(get_field(response, "system_fingerprint") or "")[:SERVED_CHARS],
        request_id(hidden, response)[:SERVED_CHARS],
    )
    return ModelOutput(
        text=get_field(message, "content") or "",
        reasoning=reasoning_text(message),
        tool_calls=calls,
        usage=usage_from_response(get_field(response, "usage")),
        provider_cost_usd=float(cost) if isinstance(cost, int | float) else None,
        served=served,  # type: ignore[arg-type]
        tier=served_tier(response),
    )
