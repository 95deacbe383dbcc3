"""Schema-1.0 conversation messages <-> Inspect AI ``ChatMessage`` JSON, both ways.

The mapping is the obvious one (system/user/assistant/tool; ``tool_calls[].name`` is Inspect's
``function``; a tool failure's ``error`` is Inspect's ``ToolCallError``). Records hold what
models sent, which Inspect's types cannot always say (a non-object ``arguments``, an error type
outside Inspect's closed set, an unknown content block). So every converted message is checked
by converting it back: when that does not give the original exactly, the original rides along
in the message's ``metadata`` and the way back returns it verbatim. Export is lossless by
construction, whatever a model wrote (docs/design/082-inspect-interop.md).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

ORIGINAL_KEY: Final = "apiflow_message"
"""Message metadata key holding a schema-1.0 message Inspect's types could not carry exactly."""

# Inspect's ToolCallError.type is a closed Literal (inspect_ai/tool/_tool_call.py).
TOOL_ERROR_TYPES: Final = frozenset(
    {
        "parsing", "timeout", "unicode_decode", "permission", "file_not_found", "is_a_directory",
        "limit", "approval", "cancelled", "sandbox_unavailable", "unknown", "output_limit",
    }
)  # fmt: skip
_SOURCES: Final = {"system": "input", "user": "input", "assistant": "generate", "tool": None}


def _block_to_inspect(block: Any) -> dict[str, Any]:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if kind == "reasoning" and isinstance(block.get("reasoning"), str):
        return {"type": "reasoning", "reasoning": block["reasoning"], "redacted": False}
    return {"type": "text", "text": ""}  # not expressible: the original travels in metadata


def _block_from_inspect(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") == "reasoning":
        return {"type": "reasoning", "reasoning": block.get("reasoning", "")}
    return {"type": "text", "text": block.get("text", "")}


def _content_to_inspect(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return [_block_to_inspect(b) for b in content]
    return ""


def _content_from_inspect(content: Any) -> Any:
    if isinstance(content, list):
        return [_block_from_inspect(b) for b in content]
    return content


def _tool_call_to_inspect(call: Any) -> dict[str, Any]:
    call = call if isinstance(call, dict) else {}
    arguments = call.get("arguments")
    out = {"id": str(call.get("id", "")), "function": str(call.get("name", "")), "arguments": arguments,
           "type": "function"}  # fmt: skip
    if not isinstance(arguments, dict):
        # What the model sent was not an object (often truncated JSON): Inspect's own field for a
        # call whose arguments did not parse; a string that does parse is shown parsed.
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else None
        except ValueError:
            parsed = None
        out["arguments"] = parsed if isinstance(parsed, dict) else {}
        if not isinstance(parsed, dict):
            out["parse_error"] = f"arguments are not a JSON object: {str(arguments)[:200]}"
    return out


def _plain(message: dict[str, Any], message_id: str, model: str | None) -> dict[str, Any]:
    role = message.get("role")
    if role not in _SOURCES:
        role = "user"  # an unknown role: shown as user text, the original kept in metadata
    out: dict[str, Any] = {
        "id": message_id,
        "role": role,
        "content": _content_to_inspect(message.get("content")),
    }
    if _SOURCES[role]:
        out["source"] = _SOURCES[role]
    if role == "assistant":
        if "tool_calls" in message:
            calls = message["tool_calls"]
            out["tool_calls"] = [_tool_call_to_inspect(c) for c in calls] if isinstance(calls, list) else []
        if model:
            out["model"] = model
    elif role == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
        out["function"] = message.get("function")
        error = message.get("error")
        if error is not None:
            error = error if isinstance(error, dict) else {}
            kind = error.get("type")
            out["error"] = {
                "type": kind if kind in TOOL_ERROR_TYPES else "unknown",
                "message": str(error.get("message", "")),
            }
    return out


def message_from_inspect(message: dict[str, Any]) -> dict[str, Any]:
    """The schema-1.0 message behind one Inspect ``ChatMessage`` (as JSON) written by the export."""
    original = (message.get("metadata") or {}).get(ORIGINAL_KEY)
    if original is not None:
        return original
    role = message.get("role")
    out: dict[str, Any] = {"role": role, "content": _content_from_inspect(message.get("content"))}
    if role == "assistant" and message.get("tool_calls") is not None:
        out["tool_calls"] = [
            {"id": c.get("id"), "name": c.get("function"), "arguments": c.get("arguments")}
            for c in message["tool_calls"]
        ]
    elif role == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
        out["function"] = message.get("function")
        if message.get("error") is not None:
            out["error"] = {"type": message["error"].get("type"), "message": message["error"].get("message")}
    return out


def message_to_inspect(message: Any, message_id: str, model: str | None = None) -> dict[str, Any]:
    """One schema-1.0 message as an Inspect ``ChatMessage`` (JSON), lossless.

    Args:
        message: The record's message (normally a dict; anything else is kept verbatim).
        message_id: Its Inspect id (stable: derived from the trial and the position).
        model: The model id set on assistant messages.
    """
    plain = _plain(message if isinstance(message, dict) else {}, message_id, model)
    if message_from_inspect(plain) != message:
        plain["metadata"] = {ORIGINAL_KEY: message}
    return plain


def messages_to_inspect(
    messages: list[Any], trial_key: str, model: str | None = None
) -> list[dict[str, Any]]:
    """A whole conversation as Inspect ``ChatMessage`` JSON; ids ``<trial digest>-m<N>``, unique
    across logs as Inspect's own random ids are, yet the same for the same trial."""
    prefix = hashlib.sha256(trial_key.encode()).hexdigest()[:10]
    return [message_to_inspect(m, f"{prefix}-m{i:05d}", model) for i, m in enumerate(messages)]


def messages_from_inspect(messages: list[dict[str, Any]]) -> list[Any]:
    """The schema-1.0 conversation behind the export's ``ChatMessage`` list."""
    return [message_from_inspect(m) for m in messages]
