"""Entity refs and tool arguments as the agent wrote them (REFERENCE §2.3).

Arguments arrive either as objects or as JSON-encoded strings, and an entity ref may
also be a ``kind:id`` / ``kind:id/kind:id`` string. These helpers read all forms
without ever raising: evidence building must survive whatever a model sent.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_REF_KINDS = frozenset({"request", "response", "variable", "spec", "handle"})


def loads_maybe(value: Any) -> Any:
    """``value`` itself, or the JSON it encodes when it is a string holding JSON."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[", '"'):
            return loads_json(text, value)
    return value


def loads_json(text: str, default: Any) -> Any:
    """Parse JSON text (fast path first; the stdlib parser for NaN, huge ints…), else ``default``."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except ValueError:
        return default


def parse_ref(ref: Any) -> tuple[str, str] | None:
    """``(kind, id)`` of an entity ref in any accepted encoding, ``None`` when unreadable.

    For a nested ref (``request:req-1/response:resp-2`` or an object with ``parent``)
    the innermost entity (the response) is returned.
    """
    ref = loads_maybe(ref)
    if isinstance(ref, dict):
        kind, ident = ref.get("kind"), ref.get("id")
        if isinstance(kind, str) and isinstance(ident, str):
            return kind, ident
        return None
    if isinstance(ref, str) and ":" in ref:
        for candidate in (ref.rsplit("/", 1)[-1], ref):
            kind, _, ident = candidate.partition(":")
            if kind in _REF_KINDS and ident:
                return kind, ident
    return None


def ref_key(kind: str, ident: str) -> str:
    """The workspace key ``kind:id`` of an entity."""
    return f"{kind}:{ident}"


def response_id(response_ref: str) -> str:
    """The ``resp-…`` id at the end of a response ref string."""
    return response_ref.rsplit("/", 1)[-1].partition(":")[2] or response_ref


def request_id(response_or_request_ref: str) -> str:
    """The ``req-…`` id of a ``request:req-…[/response:…]`` ref string."""
    first = response_or_request_ref.split("/", 1)[0]
    return first.partition(":")[2] or first
