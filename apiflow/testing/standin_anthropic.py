"""The stand-in's Anthropic Messages wire (``POST /v1/messages``): request checks, conversion, replies.

The stand-in plays offline models over HTTP; this module is the one place that speaks Anthropic's
shape, so litellm's ``anthropic/`` route can be driven end to end on 127.0.0.1. It is *strict* the
way the real API is: a request the live API answers with a 400 gets a 400 here, with the same error
shape and a message of the same kind, so a harness that drops thinking blocks in a tool loop,
orphans a tool result or sends empty content fails in a test instead of against a paid API.

Thinking blocks carry a signature the stand-in mints (an HMAC of the thinking text under a
per-server key) and verifies when the block comes back, as Anthropic verifies its own.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from apiflow.models.base import ModelOutput
from apiflow.testing.standin_cache import PromptBill

THINKING_RULE = (
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block "
    "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include "
    "thinking blocks from previous turns. To avoid this requirement, disable `thinking`."
)
"""The live API's explanation after a tool loop's assistant turn lost its thinking block."""

ERROR_TYPES = {
    "rate_limit_exceeded": "rate_limit_error",
    "server_error": "api_error",
    "invalid_request_error": "invalid_request_error",
}
"""OpenAI error codes the shared fault layer uses -> Anthropic's ``error.type``."""


class Rejected(ValueError):
    """A request the live API would refuse with 400 ``invalid_request_error`` (either wire)."""


def error_body(kind: str, message: str) -> dict[str, Any]:
    """Anthropic's error envelope (``{"type": "error", "error": {...}}``)."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(kind, kind), "message": message}}


def sign(key: bytes, thinking: str) -> str:
    """The signature of one thinking block (opaque to clients; only this server can check it)."""
    return base64.b64encode(hmac.new(key, thinking.encode(), hashlib.sha256).digest()).decode()


def thinking_enabled(body: dict[str, Any]) -> bool:
    """True when the request turns extended thinking on (``thinking.type`` enabled or adaptive)."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or () if isinstance(b, dict)]


def check_request(body: dict[str, Any], key: bytes) -> None:
    """Refuse what the live API refuses (the rules a tool loop can break).

    Raises:
        Rejected: With the live API's kind of message (index paths as it writes them).
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Rejected("messages: at least one message is required")
    if not isinstance(body.get("max_tokens"), int):
        raise Rejected("max_tokens: Field required")
    thinking = thinking_enabled(body)
    if thinking:
        budget = body["thinking"].get("budget_tokens")
        if isinstance(budget, int) and budget >= body["max_tokens"]:
            raise Rejected("`max_tokens` must be greater than `thinking.budget_tokens`")
        if body.get("temperature") not in (None, 1, 1.0):
            raise Rejected("`temperature` may only be set to 1 when thinking is enabled")
    previous_uses: set[str] = set()
    for index, message in enumerate(messages):
        role, blocks = message.get("role"), _blocks(message.get("content"))
        last = index == len(messages) - 1
        if not blocks and not (last and role == "assistant"):
            raise Rejected(
                f"messages.{index}: all messages must have non-empty content except for the optional "
                "final assistant message"
            )
        for b_index, block in enumerate(blocks):
            if block.get("type") == "text" and not block.get("text"):
                raise Rejected(
                    f"messages.{index}.content.{b_index}.text: text content blocks must be non-empty"
                )
            if block.get("type") == "thinking" and block.get("signature") != sign(
                key, block.get("thinking") or ""
            ):
                raise Rejected(f"messages.{index}.content.{b_index}: Invalid `signature` in `thinking` block")
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        orphans = [r for r in results if r not in previous_uses]
        if orphans:
            raise Rejected(
                f"messages.{index}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{orphans[0]}. Each `tool_result` block must have a corresponding `tool_use` block in the "
                "previous message."
            )
        unanswered = [u for u in previous_uses if u not in results]
        if unanswered:
            raise Rejected(
                f"messages.{index - 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {sorted(unanswered)[0]}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message."
            )
        previous_uses = (
            {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
            if role == "assistant"
            else set()
        )
    if thinking:
        _check_tool_loop_thinking(messages)


def _check_tool_loop_thinking(messages: list[dict[str, Any]]) -> None:
    """The assistant turn that opened the current tool loop must start with its thinking block."""
    last = messages[-1]
    if last.get("role") != "user" or not any(
        b.get("type") == "tool_result" for b in _blocks(last.get("content"))
    ):
        return  # not inside a tool loop: earlier thinking may be dropped
    index = len(messages) - 2
    blocks = _blocks(messages[index].get("content")) if index >= 0 else []
    first = blocks[0].get("type") if blocks else "nothing"
    if first not in ("thinking", "redacted_thinking"):
        raise Rejected(
            f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{first}`. {THINKING_RULE}"
        )


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in _blocks(content) if b.get("type") == "text")


def to_schema_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Messages request -> schema-1.0 messages (what the offline models read)."""
    system = body.get("system")
    converted: list[dict[str, Any]] = []
    if system:
        converted.append({"role": "system", "content": _tool_result_text(system)})
    for message in body["messages"]:
        blocks = _blocks(message.get("content"))
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        if message["role"] == "assistant":
            calls = [
                {"id": b["id"], "name": b["name"], "arguments": b.get("input") or {}}
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            item: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                item["tool_calls"] = calls
            converted.append(item)
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                converted.append(
                    {"role": "tool", "content": _tool_result_text(block.get("content")),
                     "tool_call_id": block.get("tool_use_id")}
                )  # fmt: skip
        if text:
            converted.append({"role": "user", "content": text})
    return converted


def _tool_input(arguments: dict[str, Any] | str) -> dict[str, Any]:
    # The Messages API returns parsed JSON objects only; a scripted malformed call cannot be sent.
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def render_message(
    model: str,
    output: ModelOutput,
    thinking: str | None,
    key: bytes,
    prompt: PromptBill,
    service_tier: str = "standard",
) -> dict[str, Any]:
    """One Messages API reply for ``output``.

    Args:
        thinking: The turn's thinking text (None when thinking is off).
        prompt: The request's prompt tokens as the prompt cache billed them (``standin_cache``):
            Anthropic caches only at marked breakpoints.
        service_tier: What ``usage.service_tier`` says: ``standard``, as Anthropic's does for an
            account without priority capacity (the stand-in has none); a Message Batches result
            says ``batch``.
    """
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": sign(key, thinking)})
    if output.text:
        content.append({"type": "text", "text": output.text})
    for call in output.tool_calls:
        content.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call.arguments)}
        )
    billed = {
        "input_tokens": prompt.input,
        "cache_creation_input_tokens": prompt.cache_write,
        "cache_read_input_tokens": prompt.cache_read,
        "cache_creation": {  # the writes by lifetime, as Anthropic splits them (priced apart)
            "ephemeral_5m_input_tokens": prompt.cache_write - prompt.cache_write_1h,
            "ephemeral_1h_input_tokens": prompt.cache_write_1h,
        },
        "output_tokens": output.usage.output + (len(thinking) // 4 if thinking else 0),  # thinking is inside
        "service_tier": service_tier,
    }
    return {
        "id": "msg_standin",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if output.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": billed,
    }
