"""What an MCP agent may say about its turn, in a ``tools/call``'s ``_meta`` (all keys optional).

- ``apiflow/turn``: ``{"id": str, "size": int, "index": int}`` -- ``size`` calls sharing ``id``
  form one assistant turn with parallel calls, run in ``index`` order (sent concurrently: each
  call's result comes back once the whole turn ran). Without it every call is a turn of its own.
- ``apiflow/call_id``: the call's id in the transcript (unique in the trial; default ``mcp-NNNN``).
- ``apiflow/text`` / ``apiflow/reasoning``: the assistant turn's visible text and reasoning.
- ``apiflow/usage``: the turn's tokens ``{input, output, cache_read, cache_write, reasoning}``
  (disjoint kinds, as ``apiflow.models.base.Usage``); an agent that sends none is recorded at 0.

Turn-level keys (text, reasoning, usage) are read from the first call of the turn that has any.
A malformed value is the agent's protocol mistake: the call is refused with a one-line error
and never reaches the trial.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apiflow.models.base import Usage

PREFIX = "apiflow/"
TURN, CALL_ID, TEXT, REASONING, USAGE = (
    PREFIX + k for k in ("turn", "call_id", "text", "reasoning", "usage")
)
MAX_TURN_SIZE = 4096
"""Calls one declared turn may hold (the loop runs at most ``TURN_TOOL_CALLS`` of them)."""
_USAGE_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")


class MetaError(ValueError):
    """A ``_meta`` value of the wrong shape."""


@dataclass(frozen=True, slots=True)
class TurnMeta:
    """The parsed ``apiflow/*`` keys of one call (defaults: a turn of its own, no text, no usage)."""

    turn_id: str | None = None
    turn_size: int = 1
    turn_index: int = 0
    call_id: str | None = None
    text: str = ""
    reasoning: str | None = None
    usage: Usage = Usage()
    declares_turn: bool = False
    """True when any of text, reasoning or usage was given."""


def parse_meta(meta: Mapping[str, Any] | None) -> TurnMeta:
    """Read the ``apiflow/*`` keys of a request's ``_meta``; other keys are ignored.

    Raises:
        MetaError: A key has a value of the wrong type or range.
    """
    if not meta:
        return TurnMeta()
    turn_id, size, index = _turn(meta.get(TURN))
    call_id = _opt_str(meta, CALL_ID)
    text = _opt_str(meta, TEXT)
    reasoning = _opt_str(meta, REASONING)
    usage = _usage(meta.get(USAGE))
    return TurnMeta(
        turn_id=turn_id,
        turn_size=size,
        turn_index=index,
        call_id=call_id,
        text=text or "",
        reasoning=reasoning,
        usage=usage or Usage(),
        declares_turn=text is not None or reasoning is not None or usage is not None,
    )


def _opt_str(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is not None and not isinstance(value, str):
        raise MetaError(f"_meta {key!r} must be a string")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _turn(value: Any) -> tuple[str | None, int, int]:
    if value is None:
        return None, 1, 0
    if not isinstance(value, Mapping):
        raise MetaError(f"_meta {TURN!r} must be an object {{id, size, index}}")
    turn_id, size, index = value.get("id"), value.get("size", 1), value.get("index", 0)
    if not isinstance(turn_id, str) or not _is_int(size) or not _is_int(index):
        raise MetaError(f"_meta {TURN!r} wants a string id and integer size and index")
    if not 1 <= size <= MAX_TURN_SIZE or not 0 <= index < size:
        raise MetaError(f"_meta {TURN!r}: size must be 1..{MAX_TURN_SIZE} and 0 <= index < size")
    return turn_id, size, index


def _usage(value: Any) -> Usage | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - set(_USAGE_KINDS):
        raise MetaError(f"_meta {USAGE!r} must be an object with keys among {', '.join(_USAGE_KINDS)}")
    counts = {k: value.get(k, 0) for k in _USAGE_KINDS}
    if not all(_is_int(v) and 0 <= v < 2**53 for v in counts.values()):
        raise MetaError(f"_meta {USAGE!r} counts must be non-negative integers")
    return Usage(**counts)


def turn_meta(
    *,
    turn_id: str | None = None,
    size: int = 1,
    index: int = 0,
    call_id: str | None = None,
    text: str | None = None,
    reasoning: str | None = None,
    usage: Usage | None = None,
) -> dict[str, Any]:
    """The ``_meta`` dict an agent sends (the inverse of ``parse_meta``), for agents in Python."""
    meta: dict[str, Any] = {}
    if turn_id is not None:
        meta[TURN] = {"id": turn_id, "size": size, "index": index}
    if call_id is not None:
        meta[CALL_ID] = call_id
    if text is not None:
        meta[TEXT] = text
    if reasoning is not None:
        meta[REASONING] = reasoning
    if usage is not None:
        meta[USAGE] = {k: getattr(usage, k) for k in _USAGE_KINDS}
    return meta
