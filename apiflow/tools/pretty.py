"""``indented``: ``json.dumps(value, indent=2)``, the text ``read`` returns, built with fewer calls.

With ``indent`` set, json takes its pure-Python encoder: a chain of generators yielding a chunk per
token, about 1,900 function calls to read back one 2 KB response (a calibrated trial reads 0.6 of
them; docs/results/030-agent-loop-rounds.md, "Trial cost, round four (world + tools)"). Here each container is one call that joins its items, and
strings go straight to json's own C escaper. The text is the same: only plain JSON data (exact
``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite ``float``, ``bool``, ``None``, less
than ``_DEPTH`` deep) takes this path; anything else (a tuple, a non-string key, NaN, a subclass,
a cycle) goes to ``json.dumps`` itself, which words its own result or error.
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any

_DEPTH = 100
"""Deepest nesting taken here; deeper values (or a cycle) are left to ``json.dumps``."""


class _Unusual(Exception):
    """The value holds something only ``json.dumps`` knows how to word."""


def indented(value: Any) -> str:
    """``json.dumps(value, indent=2)`` (ASCII escapes, ``", "``/``": "`` separators)."""
    try:
        return _text(value, "\n", 0)
    except (_Unusual, ValueError):
        return json.dumps(value, indent=2)


def _text(value: Any, newline: str, depth: int) -> str:
    """``value`` as it is encoded at the indentation ``newline`` (``"\\n"`` plus its spaces)."""
    kind = type(value)
    if kind is str:
        return encode_basestring_ascii(value)
    if kind is dict:
        if not value:
            return "{}"
        if depth >= _DEPTH:
            raise _Unusual
        inner = newline + "  "
        items = []
        for key, item in value.items():
            if type(key) is not str:
                raise _Unusual
            text = encode_basestring_ascii(item) if type(item) is str else _text(item, inner, depth + 1)
            items.append(encode_basestring_ascii(key) + ": " + text)
        return "{" + inner + ("," + inner).join(items) + newline + "}"
    if kind is list:
        if not value:
            return "[]"
        if depth >= _DEPTH:
            raise _Unusual
        inner = newline + "  "
        texts = [
            encode_basestring_ascii(item) if type(item) is str else _text(item, inner, depth + 1)
            for item in value
        ]
        return "[" + inner + ("," + inner).join(texts) + newline + "]"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)  # what json writes (ValueError past 4,300 digits: json.dumps's to word)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    raise _Unusual
