"""URL patterns of predicates, checkpoints and constraints, matched with ``re.search`` semantics.

Every pattern goes through ``apiflow.world.patterns.grading_pattern`` (RE2: linear time, and a
pattern RE2 refuses is matched literally, docs/design/061). One shape is settled here without
RE2: a literal path followed by ``(?:\\?|$)`` (the path, then its query string or the end), which is
how bank tasks write nearly every route. Each RE2 search costs a few Python calls in the binding
and a live trial asks a few dozen (pattern, URL) questions, so the shape is worth its own matcher
(docs/results/010-grading-rules-measurements.md, "Round four").
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from apiflow.world.patterns import (
    CERTAIN_LITERAL,
    PatternError,
    SafePattern,
    compile_pattern,
    grading_pattern,
)

_PATH_END = r"(?:\?|$)"


class PathPattern(NamedTuple):
    """``<literal>(?:\\?|$)`` as plain string tests (same answers as RE2 plus ``SafePattern.search``).

    The pattern matches where the literal is followed by ``?`` or by the end of the text; Python's
    ``$`` (which ``SafePattern.search`` reproduces) also matches before a final newline.
    """

    needle: str
    query: str
    """``needle + "?"``."""
    final: str
    """``needle + "\\n"``."""

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text``."""
        return self.needle in text and (
            text.endswith(self.needle) or self.query in text or text.endswith(self.final)
        )


@lru_cache(maxsize=4096)
def url_regex(pattern: str) -> SafePattern | PathPattern:
    """The compiled URL pattern (``re.search`` semantics, RE2: linear time, docs/design/061).

    A pattern RE2 refuses (invalid, or backreferences/look-around) matches literally. Cached per
    pattern, as ``grading_pattern`` is (bounded; a pattern's matcher never changes).
    """
    path = _path_pattern(pattern)
    if path is not None and len(pattern) <= CERTAIN_LITERAL and pattern.isascii():
        # An ASCII literal (RE2 accepts it, patterns.py) with the end group is accepted too, and
        # stays under the program size: grading_pattern would return the same, after compiling a
        # program nobody runs.
        return path
    compiled = grading_pattern(pattern)
    if compiled.regexp is None or path is None:
        return compiled
    return path


def _path_pattern(pattern: str) -> PathPattern | None:
    """``PathPattern`` of ``<literal>(?:\\?|$)``; None for any other pattern."""
    if not pattern.endswith(_PATH_END):
        return None
    try:
        prefix = compile_pattern(pattern[: -len(_PATH_END)])
    except PatternError:
        return None
    if prefix.regexp is not None:
        return None  # the prefix is a regex of its own: RE2 decides
    return PathPattern(prefix.needle, prefix.needle + "?", prefix.needle + "\n")
