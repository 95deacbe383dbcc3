"""The stand-in's OpenAI Responses wire (``POST /v1/responses``): input items in, output items out.

litellm's ``openai/responses/<model>`` route speaks this API; a reasoning model's turn comes back as
a ``reasoning`` item before its ``function_call`` items, and the next request must carry that item
back in its ``input``. As OpenAI documents it: the item's ``encrypted_content`` comes only when the
request ``include``s ``reasoning.encrypted_content``; with ``store`` off nothing is kept, so an item
sent back without it is not found (404), while with ``store`` on (the API's default) its id is looked
up. The stand-in mints the encrypted content over the whole item (id, summary, reasoning) with an
HMAC under the server's key, so an item changed in any way, or a ``function_call`` whose turn lost
its reasoning item, is refused, as is a ``function_call_output`` with no call (400 in the API's
error shape). A summary is returned only when ``reasoning.summary`` asks for one.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Container
from typing import Any

from apiflow.models.base import ModelOutput
from apiflow.testing.standin_anthropic import Rejected, sign
from apiflow.testing.standin_openai import CHARS_PER_TOKEN, served_tier

_PREFIX = "gAAAAA"  # what the live API's encrypted reasoning looks like (REFERENCE §1)
ENCRYPTED = "reasoning.encrypted_content"


class NotFound(Rejected):
    """An item or response the request names that the API does not hold (404, ``invalid_request_error``)."""

    status = 404


def item_id(key: bytes, prefix: str, text: str) -> str:
    """A stable id for an item the stand-in mints (the same turn always gets the same id)."""
    return prefix + hashlib.sha256(key + text.encode()).hexdigest()[:40]


def encrypt(key: bytes, item: dict[str, Any], text: str) -> str:
    """Opaque encrypted content for one reasoning item, binding its id and summary (only this server
    can check it)."""
    payload = json.dumps({"id": item["id"], "summary": item["summary"], "text": text}, sort_keys=True)
    return f"{_PREFIX}{base64.urlsafe_b64encode(payload.encode()).decode()}.{sign(key, payload)}"


def _verifies(key: bytes, item: dict[str, Any]) -> bool:
    """True when the item is the one this server minted, unchanged."""
    content = item.get("encrypted_content")
    if not isinstance(content, str) or not content.startswith(_PREFIX) or "." not in content:
        return False
    encoded, _, mac = content[len(_PREFIX) :].partition(".")
    try:
        payload = base64.urlsafe_b64decode(encoded.encode()).decode()
        minted = json.loads(payload)
    except ValueError:
        return False
    if not isinstance(minted, dict):
        return False
    same = minted.get("id") == item.get("id") and minted.get("summary") == item.get("summary", [])
    return same and mac == sign(key, payload)


def reasoning_enabled(body: dict[str, Any]) -> bool:
    """True when the request asks for reasoning (``reasoning.effort`` other than none)."""
    reasoning = body.get("reasoning")
    return isinstance(reasoning, dict) and reasoning.get("effort") not in (None, "none")


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return [item for item in raw or () if isinstance(item, dict)]


def check_request(body: dict[str, Any], key: bytes, stored: Container[str] = ()) -> None:
    """Refuse what the live Responses API refuses in a tool loop.

    ``stored`` holds the ids of reasoning items answered with ``store`` on (the API keeps those).

    Raises:
        NotFound: A ``previous_response_id`` (the stand-in keeps no responses), or a reasoning item
            sent back without its encrypted content that was not stored (with ``store`` off nothing is).
        Rejected: A reasoning item changed in any way, a ``function_call_output`` without its call,
            or (reasoning on) a ``function_call`` not preceded in its turn by its reasoning item.
    """
    if body.get("previous_response_id"):
        raise NotFound(f"Previous response with id '{body['previous_response_id']}' not found.")
    reasoning = reasoning_enabled(body)
    calls: set[str] = set()
    signed_turn = False
    for index, item in enumerate(_items(body)):
        kind = item.get("type", "message")
        if kind == "reasoning":
            if "encrypted_content" not in item or item["encrypted_content"] is None:
                _look_up(body, item, stored)
            elif not _verifies(key, item):
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


def _look_up(body: dict[str, Any], item: dict[str, Any], stored: Container[str]) -> None:
    """A reasoning item sent back by id alone must be one the API stored."""
    if body.get("store") is False:
        raise NotFound(
            f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` is set to "
            "false. Try again with `store` set to true, or remove this item from your input."
        )
    if item.get("id") not in stored:
        raise NotFound(f"Item with id '{item.get('id')}' not found.")


def encrypted_included(body: dict[str, Any]) -> bool:
    """True when the request asks for reasoning items' encrypted content."""
    return ENCRYPTED in (body.get("include") or ())


def summary_requested(body: dict[str, Any]) -> bool:
    reasoning = body.get("reasoning")
    return isinstance(reasoning, dict) and reasoning.get("summary") in ("auto", "concise", "detailed")


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


def render_response(
    body: dict[str, Any], output: ModelOutput, reasoning: str | None, key: bytes
) -> dict[str, Any]:
    """One Responses API reply: a reasoning item (when reasoning), function calls, the message.

    The reasoning item carries its summary only when ``reasoning.summary`` asks for one, and its
    encrypted content only when ``include`` does, as the API returns them; ``service_tier`` names
    the tier served (``standin_openai.served_tier``).
    """
    items: list[dict[str, Any]] = []
    if reasoning is not None:
        summary = [{"type": "summary_text", "text": reasoning}] if summary_requested(body) else []
        item: dict[str, Any] = {"type": "reasoning", "id": item_id(key, "rs_", reasoning), "summary": summary}
        if encrypted_included(body):
            item["encrypted_content"] = encrypt(key, item, reasoning)
        items.append(item)
    for call in output.tool_calls:
        arguments = (
            call.arguments
            if isinstance(call.arguments, str)
            else json.dumps(call.arguments, ensure_ascii=False)
        )
        items.append({"type": "function_call", "id": f"fc_{call.id}", "call_id": call.id, "name": call.name,
                      "arguments": arguments, "status": "completed"})  # fmt: skip
    if output.text or not output.tool_calls:
        items.append({"type": "message", "id": item_id(key, "msg_", output.text), "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": output.text, "annotations": []}]})  # fmt: skip
    usage = output.usage
    spent = len(reasoning) // CHARS_PER_TOKEN if reasoning else 0  # as the chat wire counts it
    return {
        "id": item_id(key, "resp_", json.dumps(items, sort_keys=True)),
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": str(body.get("model", "")),
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "store": body.get("store") is not False,
        "service_tier": served_tier(body),
        "usage": {
            "input_tokens": usage.input + usage.cache_read,
            "input_tokens_details": {"cached_tokens": usage.cache_read},
            "output_tokens": usage.output + spent,
            "output_tokens_details": {"reasoning_tokens": spent},
            "total_tokens": usage.input + usage.cache_read + usage.output + spent,
        },
    }
