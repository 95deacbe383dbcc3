"""The stand-in's OpenAI Responses wire (``POST /v1/responses``): input items in, output items out.

litellm's ``openai/responses/<model>`` route speaks this API; a reasoning model's turn comes back as
a ``reasoning`` item with ``encrypted_content`` before its ``function_call`` items, and the next
request must carry that item back in its ``input``. With ``reasoning`` on in the request the
stand-in mints the encrypted content (the text and an HMAC under the server's key) and refuses a
``function_call`` whose reasoning item is missing or forged, and a ``function_call_output`` with
no call, as the live API does (400 in its error shape).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from apiflow.models.base import ModelOutput
from apiflow.testing.standin_anthropic import Rejected, sign

_PREFIX = "gAAAAA"  # what the live API's encrypted reasoning looks like (REFERENCE §1)


def encrypt(key: bytes, text: str) -> str:
    """Opaque encrypted content for one reasoning item (only this server can check it)."""
    return f"{_PREFIX}{base64.urlsafe_b64encode(text.encode()).decode()}.{sign(key, text)}"


def _verifies(key: bytes, content: Any) -> bool:
    if not isinstance(content, str) or not content.startswith(_PREFIX) or "." not in content:
        return False
    encoded, _, mac = content[len(_PREFIX) :].partition(".")
    try:
        text = base64.urlsafe_b64decode(encoded.encode()).decode()
    except ValueError:
        return False
    return mac == sign(key, text)


def reasoning_enabled(body: dict[str, Any]) -> bool:
    """True when the request asks for reasoning (``reasoning.effort`` other than none)."""
    reasoning = body.get("reasoning")
    return isinstance(reasoning, dict) and reasoning.get("effort") not in (None, "none")


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return [item for item in raw or () if isinstance(item, dict)]


def check_request(body: dict[str, Any], key: bytes) -> None:
    """Refuse what the live Responses API refuses in a tool loop.

    Raises:
        Rejected: A ``function_call_output`` without its call, or (reasoning on) a ``function_call``
            not preceded in its turn by a reasoning item whose encrypted content verifies.
    """
    reasoning = reasoning_enabled(body)
    calls: set[str] = set()
    signed_turn = False
    for index, item in enumerate(_items(body)):
        kind = item.get("type", "message")
        if kind == "reasoning":
            if not _verifies(key, item.get("encrypted_content")):
                raise Rejected(
                    f"input[{index}]: The encrypted content for item {item.get('id')} could not be verified."
                )
            signed_turn = True
        elif kind == "function_call":
            if reasoning and not signed_turn:
                raise Rejected(
                    f"input[{index}]: Item of type 'function_call' was provided without its required "
                    "'reasoning' item."
                )
            calls.add(str(item.get("call_id")))
        elif kind == "function_call_output":
            if str(item.get("call_id")) not in calls:
                raise Rejected(
                    f"input[{index}]: No tool call found for function call output with call_id "
                    f"{item.get('call_id')}."
                )
        else:
            signed_turn = False  # a message ends the turn the reasoning item belonged to


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content or () if isinstance(p, dict))


def to_schema_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses request -> schema-1.0 messages (what the offline models read)."""
    converted: list[dict[str, Any]] = []
    if body.get("instructions"):
        converted.append({"role": "system", "content": str(body["instructions"])})
    for item in _items(body):
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role", "user")
            converted.append(
                {"role": "system" if role == "developer" else role, "content": _text(item.get("content"))}
            )
        elif kind == "function_call":
            raw = item.get("arguments") or ""
            try:
                args: Any = json.loads(raw) if raw else {}
            except ValueError:
                args = raw
            call = {"id": item.get("call_id"), "name": item.get("name"), "arguments": args}
            last = converted[-1] if converted else None
            if last is not None and last["role"] == "assistant":  # parallel calls of one turn
                last.setdefault("tool_calls", []).append(call)
            else:
                converted.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            converted.append({"role": "tool", "content": _text(output), "tool_call_id": item.get("call_id")})
    return converted


def render_response(model: str, output: ModelOutput, reasoning: str | None, key: bytes) -> dict[str, Any]:
    """One Responses API reply: a reasoning item (when reasoning), function calls, the message."""
    items: list[dict[str, Any]] = []
    if reasoning is not None:
        items.append({"type": "reasoning", "id": "rs_standin", "summary": [{"type": "summary_text", "text": reasoning}],
                      "encrypted_content": encrypt(key, reasoning)})  # fmt: skip
    for call in output.tool_calls:
        arguments = (
            call.arguments
            if isinstance(call.arguments, str)
            else json.dumps(call.arguments, ensure_ascii=False)
        )
        items.append({"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id, "name": call.name,
                      "arguments": arguments, "status": "completed"})  # fmt: skip
    if output.text or not output.tool_calls:
        items.append({"type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": output.text, "annotations": []}]})  # fmt: skip
    usage = output.usage
    spent = len(reasoning) // 4 if reasoning else 0
    return {
        "id": "resp_standin",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": model,
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage.input + usage.cache_read,
            "input_tokens_details": {"cached_tokens": usage.cache_read},
            "output_tokens": usage.output + spent,
            "output_tokens_details": {"reasoning_tokens": spent},
            "total_tokens": usage.input + usage.cache_read + usage.output + spent,
        },
    }
