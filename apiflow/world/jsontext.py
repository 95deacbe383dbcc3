"""``dumps``, ``dumps_unicode`` and ``loads``: ``json.dumps(value)``, ``json.dumps(value, ensure_ascii=False)``
and ``json.loads(text)``.

Every tool call serialises a few values (the world's body for ``content-length``, an agent's body
for the canary scan, the execute result), and ``json.dumps`` reaches its C encoder through three
Python frames each time (``dumps``, ``JSONEncoder.encode``, ``iterencode``; a new ``JSONEncoder``
too when an argument is not the default). These make the very encoder those frames make, from
json's own parts and with the same arguments (a fresh circular-reference table, ``", "``/``": "``,
NaN allowed, keys unsorted), so the text and every error are ``json.dumps``'s. Without json's C
accelerator they are ``json.dumps`` itself. ``loads`` calls the scanner ``json.loads`` reaches through
``loads``, ``decode`` and ``raw_decode`` (a salted response body is decoded on nearly every call).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

_DEFAULT = json.JSONEncoder().default
"""What ``json.dumps`` calls for a value it cannot encode: raises json's own TypeError."""


def _c_dumps(escape: Callable[[str], str], ensure_ascii: bool) -> Callable[[Any], str]:
    if c_make_encoder is None:  # pragma: no cover - CPython builds json's C accelerator
        return lambda value: json.dumps(value, ensure_ascii=ensure_ascii)

    def dumps(value: Any) -> str:
        if isinstance(value, str):  # JSONEncoder.encode's shortcut
            return escape(value)
        encode = c_make_encoder({}, _DEFAULT, escape, None, ": ", ", ", False, False, True)
        return "".join(encode(value, 0))

    return dumps


dumps = _c_dumps(encode_basestring_ascii, True)
"""``json.dumps(value)``."""
dumps_unicode = _c_dumps(encode_basestring, False)
"""``json.dumps(value, ensure_ascii=False)``."""


_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""The scanner of ``json.loads``'s default decoder (C when json's accelerator is built)."""


def loads(text: str) -> Any:
    """``json.loads(text)``.

    A text that is one JSON value from its first character to its last (what ``dumps`` writes) is
    scanned straight; anything else (leading or trailing whitespace, extra data, a BOM, not a
    string, not JSON) goes to ``json.loads``, which answers or words the error. An error the scan
    raises itself is the one ``json.loads`` raises for the same text, from the same scan.
    """
    if type(text) is str:
        try:
            value, end = _scan(text, 0)
        except StopIteration:
            pass  # no value at the first character: json.loads words it
        else:
            if end == len(text):
                return value
    return json.loads(text)
