"""What a scripted model reads back from a trial: cut previews, and the per-trial forms of bank values.

A script names the bank's literals (``smk-e36f-0db4``); a salting world (``apiflow.world.canaries``)
shows ``smk-e36f-0db4~k3f9q2`` instead. These helpers find the literals a script names, swap in the
forms the responses showed, and spot the responses the agent saw only through a cut preview.
"""

from __future__ import annotations

import functools
import json
import re
from collections import OrderedDict
from typing import Any, Final

from apiflow.world.canaries import SCOPE_HEADER, SEPARATOR

PREVIEW_MARK = "…"
PREVIEW_MARKS = (PREVIEW_MARK, "\\u2026")  # as shown, and as an ASCII-escaped tool result carries it
SCOPE_MARK = json.dumps(dict([SCOPE_HEADER]))[1:-1]  # '"x-apiflow-values": "per-trial"' in a result
_RESPONSE_REF_RE = re.compile(r'^\{"response_ref": "([^"]+)"')
_DECODER = json.JSONDecoder()


def cut_ref(content: str) -> str | None:
    """The response ref of an execute result whose body preview was cut, else None."""
    match = _RESPONSE_REF_RE.match(content)
    if match is None:
        return None
    try:
        preview = json.loads(content).get("body_preview")
    except (ValueError, AttributeError):
        return None
    return match.group(1) if isinstance(preview, str) and preview.endswith(PREVIEW_MARK) else None


@functools.lru_cache(maxsize=1024)
def _literal_pattern(literals: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(f"(?:{'|'.join(map(re.escape, literals))})(?!{re.escape(SEPARATOR)})")


class CanaryReader:
    """Swaps each bank literal a script names for the per-trial form the responses showed.

    Get one with ``canary_reader``: a reader is a pure function of its learned forms, and the
    trials of one (task, epoch) learn the same forms, so they share one reader and what it swapped.
    """

    def __init__(self, learned: dict[str, str]) -> None:
        self._learned = dict(learned)
        # Longest first, ties in string order: (-len(v), v) order, by two C-keyed stable sorts.
        self._re = _literal_pattern(tuple(sorted(sorted(learned), key=len, reverse=True)))
        self._swapped: dict[str, Any] = {}  # argument JSON text -> the swapped value (or _UNCHANGED)

    def _swap(self, text: str) -> str:
        learned = self._learned
        return self._re.sub(lambda m: learned[m[0]], text)

    def apply(self, value: Any) -> Any:
        """``value`` (a string or JSON arguments) with the learned forms swapped in."""
        if isinstance(value, str):
            return self._swap(value) if value else value
        return self.apply_dumped(value, json.dumps(value, ensure_ascii=False))

    def apply_dumped(self, value: Any, text: str) -> Any:
        """``apply`` for JSON arguments whose ``json.dumps(value, ensure_ascii=False)`` is ``text``.

        The swapped value is a function of the text (and this reader's forms), so it is worked out
        once per text and handed to every trial that asks: as the script's own argument objects
        are, since nothing downstream mutates tool-call arguments (the tools never change what
        they are handed: tests/fuzz/test_evidence_fuzz.py).
        """
        swapped = self._swapped.get(text)
        if swapped is None:
            swapped = self._swapped[text] = self._swapped_value(text)
        return value if swapped is _UNCHANGED else swapped

    def _swapped_value(self, text: str) -> Any:
        if not self._re.search(text):
            return _UNCHANGED  # names nothing learned: the caller's own object, untouched
        # Literals and their forms hold no JSON-special characters, so the swapped text is still
        # exactly one JSON document without surrounding space: what json.loads checks for
        # before and after the parse is known, and only the parse is left to do.
        return _DECODER.raw_decode(self._swap(text))[0]


_UNCHANGED: Final = object()
_READERS_HELD: Final = 4096
_readers: OrderedDict[frozenset[tuple[str, str]], CanaryReader] = OrderedDict()


def canary_reader(learned: dict[str, str]) -> CanaryReader:
    """The reader of these learned forms, shared by every trial that learned the same (bounded:
    the least recently used leaves first)."""
    key = frozenset(learned.items())
    reader = _readers.get(key)
    if reader is None:
        reader = _readers[key] = CanaryReader(learned)
        if len(_readers) > _READERS_HELD:
            _readers.popitem(last=False)
    else:
        _readers.move_to_end(key)
    return reader
