"""G2: reading the answer card from the final assistant message and comparing fields.

The rules are the ones REFERENCE §5.7 verified on the whole published corpus:

* the card comes from the last assistant message whose text or reasoning is non-empty
  (so the empty turn after ``clarify``/``report_blocked`` is skipped); its text is used,
  its reasoning only when the text is empty;
* every top-level JSON object in that text counts, in document order, whether fenced,
  ``<json>``-tagged or inline, and for each field the last object holding it wins;
* three comparators (``string``, ``numeric``, ``set``); the newer published grader
  generation also accepts a string whose extra words are a parenthetical qualifier.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple

Generation = Literal["original", "newer"]
"""Answer-comparison generation: the original grader, or the newer one (board update)."""

NUMERIC_TOLERANCE = 0.01
_DECODER = json.JSONDecoder()
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
_SET_SEPARATORS = re.compile(r"[,/|]")
_PARENTHETICAL = re.compile(r"\([^()]*\)")


def message_parts(message: Mapping[str, Any]) -> tuple[str, str]:
    """``(text, reasoning)`` of one assistant message (blocks joined by newlines)."""
    content = message.get("content")
    if isinstance(content, str):
        return content, ""
    texts: list[str] = []
    reasoning: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "reasoning" and isinstance(block.get("reasoning"), str):
            reasoning.append(block["reasoning"])
    return "\n".join(texts), "\n".join(reasoning)


def final_message(messages: Iterable[Mapping[str, Any]]) -> tuple[str, str]:
    """``(text, reasoning)`` of the last assistant message with any non-empty text or reasoning."""
    for message in reversed(list(messages)):
        if message.get("role") != "assistant":
            continue
        text, reasoning = message_parts(message)
        if text.strip() or reasoning.strip():
            return text, reasoning
    return "", ""


def top_level_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in document order.

    Fences, ``<json>`` tags and prose around the objects are ignored: the scan starts a
    JSON decode at each ``{`` not inside an object already taken.
    """
    objects: list[dict[str, Any]] = []
    start = text.find("{")
    while start != -1:
        # Only `"` or `}` can follow an object's `{`: anything else fails to decode anyway, and a
        # failed decode costs O(position) (its error counts lines), which made a text of many `{`
        # quadratic to grade (docs/results/031-untrusted-model-input-measurements.md).
        if _OBJECT_START.match(text, start) is None:
            start = text.find("{", start + 1)
            continue
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        except RecursionError:
            # Nested past the decoder's depth limit: neither it nor any object inside it is a card.
            # Skipping it whole keeps grading linear (retrying each inner `{` would redo the walk).
            start = text.find("{", _bracket_end(text, start))
            continue
        objects.append(value)
        start = text.find("{", end)
    return objects


def _bracket_end(text: str, start: int) -> int:
    """Where the bracket group opened at ``start`` closes (strings respected), or the text's end."""
    depth, in_string, i, n = 0, False, start, len(text)
    while i < n:
        char = text[i]
        if in_string:
            if char == "\\":
                i += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def extract_card(text: str, reasoning: str = "") -> dict[str, Any]:
    """The answer card: fields merged over all top-level objects, last holder wins.

    Args:
        text: The final message's text.
        reasoning: Its reasoning, used only when ``text`` is empty.
    """
    source = text if text.strip() else reasoning
    card: dict[str, Any] = {}
    for obj in top_level_objects(source):
        card.update(obj)
    return card


class Comparison(NamedTuple):
    """Result of one comparator: ``reason`` says why it failed (``None`` on a pass)."""

    passed: bool
    reason: str | None = None


_PASSED = Comparison(True)


def _normalise(text: str) -> str:
    """Lower-cased, alphanumeric characters only (``filter``: same characters, no generator)."""
    return "".join(filter(str.isalnum, text.lower()))


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def compare_string(got: Any, expected: Any, generation: Generation = "original") -> Comparison:
    """Case- and separator-insensitive equality; ``None``, ``''``, objects and lists fail."""
    if got is None or isinstance(got, dict | list) or got == "":
        return Comparison(False, f"{got!r} != expected {expected!r}")
    want = _normalise(_as_text(expected))
    have = _as_text(got)
    if want and _normalise(have) == want:
        return _PASSED
    if generation == "newer" and "(" in have:
        # The newer grader tolerates a parenthetical qualifier: "/v3/geofences (definitions)".
        if want and _normalise(_PARENTHETICAL.sub(" ", have)) == want:
            return _PASSED
    return Comparison(False, f"{got!r} != expected {expected!r}")  # the message only when it fails


def _to_float(value: Any) -> float | None:
    if not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def compare_numeric(got: Any, expected: Any, typed: bool = False) -> Comparison:
    """``float()`` of an int, float or numeric string, within ±0.01 (absolute).

    ``typed`` refuses booleans, which Python (and the published grader) reads as 0 and 1.
    """
    if typed and isinstance(got, bool):
        return Comparison(False, f"value {got!r} is a boolean, not a number")
    have = _to_float(got)
    if have is None:
        return Comparison(False, f"value {got!r} is not numeric")
    want = _to_float(expected)
    if want is None:
        return Comparison(False, f"expected value {expected!r} is not numeric")
    if abs(have - want) <= NUMERIC_TOLERANCE:
        return _PASSED
    return Comparison(False, f"{have} != {want} (tol ±{NUMERIC_TOLERANCE})")


def set_tokens(value: Any) -> set[str]:
    """A list's elements, or a string split only on ``,`` ``/`` ``|``; stripped, lower-cased."""
    if isinstance(value, list):
        return {_as_text(item).strip().lower() for item in value}
    text = value if isinstance(value, str) else str(value)
    return {token.strip().lower() for token in _SET_SEPARATORS.split(text) if token.strip()}


def compare_set(got: Any, expected: Any) -> Comparison:
    """Order-free set equality after tokenising both sides."""
    have, want = set_tokens(got), set_tokens(expected)
    if have == want:
        return _PASSED
    return Comparison(False, f"set {sorted(have)} != expected {sorted(want)}")


def compare(
    comparator: str, got: Any, expected: Any, generation: Generation = "original", *, typed: bool = False
) -> Comparison:
    """Dispatch to one of the three comparators by name (``typed``: see ``compare_numeric``)."""
    if comparator == "numeric":
        return compare_numeric(got, expected, typed)
    if comparator == "set":
        return compare_set(got, expected)
    if comparator == "string":
        return compare_string(got, expected, generation)
    raise ValueError(f"unknown comparator {comparator!r}")
