"""Bank-supplied regular expressions, evaluated in linear time (RE2).

A bank is untrusted data (docs/design/061-untrusted-banks.md). Python's ``re`` backtracks, so a
pattern such as ``(a+)+$`` takes time exponential in the text it is matched against. Every
pattern a bank supplies (a world's ``matches`` condition; a predicate's, checkpoint's or
constraint's URL pattern) is therefore compiled here with RE2, which never backtracks: matching is
linear in the text and compiling is bounded by RE2's memory budget. A pattern RE2 cannot compile
(backreferences, look-around) is refused when the bank loads (``PatternError``); published
transcripts being regraded are untrusted too, and there such a pattern is matched literally
(``grading_pattern``), the rule that already held for a regex Python cannot compile.

Speed: the RE2 binding costs a few microseconds per search, about ten times Python's ``re``. Most
patterns are escaped URL paths, and most (pattern, URL) pairs do not match, so each pattern
carries the literal text every match must contain (its leading literal run): a plain substring
test settles those pairs, and a pattern that is nothing but a literal never reaches RE2 at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

MAX_PATTERN_LENGTH = 4096
"""Longest bank pattern accepted (bank/v1's longest is 61 characters)."""
MAX_PROGRAM_SIZE = 1000
"""Largest compiled RE2 program accepted (the shipped patterns' largest is 59).

Matching is linear in the text, but its constant grows with the program, steeply once RE2's DFA
runs out of memory (``[a-z]{1000}`` four times over: docs/results/issue24-house.md, "Figures moved
out of code comments").
"""

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern to stderr
_OPTIONS.never_capture = True  # only "does it match" is ever asked
_META = frozenset("\\.^$*+?{}[]|()")
_QUANTIFIERS = frozenset("*+?{")
CERTAIN_LITERAL = MAX_PROGRAM_SIZE - 10
"""Literals up to this length compile under ``MAX_PROGRAM_SIZE`` (n + 4 instructions) without asking RE2."""


class PatternError(ValueError):
    """A bank pattern RE2 refuses (or one longer than ``MAX_PATTERN_LENGTH``); the message is one line."""


@dataclass(frozen=True, slots=True)
class SafePattern:
    """A compiled pattern with ``re.search`` semantics, in time linear in the text.

    ``needle`` is text every match contains ("" when none is known); ``regexp`` is None when the
    pattern is that literal and nothing else.
    """

    source: str
    needle: str
    regexp: Any

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text``."""
        if self.needle not in text:
            return False
        if self.regexp is None:
            return True
        # The bytes entry point of the binding is ~4x cheaper than its str one (no offset
        # bookkeeping); "surrogatepass" keeps a lone surrogate sent by a model from raising.
        if self.regexp.search(text.encode("utf-8", "surrogatepass")) is not None:
            return True
        # Python's `$` also matches just before a final newline; RE2's only at the very end.
        # Searching the text without that newline as well gives Python's answer.
        return (
            text.endswith("\n") and self.regexp.search(text[:-1].encode("utf-8", "surrogatepass")) is not None
        )


def _top_level_alternation(pattern: str) -> bool:
    """Whether ``|`` occurs outside every group and character class (then no prefix is required)."""
    depth, i, in_class = 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1  # a leading "]" is a member, not the end
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth <= 0:
            return True
        i += 1
    return False


def _leading_literal(pattern: str) -> tuple[str, bool]:
    """The literal run a pattern starts with, and whether it is the whole pattern.

    ``\\-``-style escapes of punctuation are literal; ``\\d``-style escapes and metacharacters end the
    run. A character followed by a quantifier is optional or repeated, so it is left out.
    """
    chars: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if not nxt or (nxt.isascii() and nxt.isalnum()):
                break
            char, width = nxt, 2
        elif c in _META:
            break
        else:
            char, width = c, 1
        if pattern[i + width : i + width + 1] in _QUANTIFIERS:
            return "".join(chars), False
        chars.append(char)
        i += width
    return "".join(chars), i == len(pattern)


def _compile(source: str) -> SafePattern:
    if len(source) > MAX_PATTERN_LENGTH:
        raise PatternError(
            f"pattern of {len(source)} characters is longer than MAX_PATTERN_LENGTH={MAX_PATTERN_LENGTH}"
        )
    needle, whole = _leading_literal(source)
    if whole and len(source) <= CERTAIN_LITERAL and source.isascii():
        # RE2 accepts every ASCII literal in this sense (bare characters but metacharacters, and
        # escapes of ASCII punctuation) and compiles n characters to n + 4 instructions: compiling
        # one only to drop the program changes nothing. A grid's trials ask for thousands of them
        # (per-trial canary forms in URLs), more than the caches below hold (docs/design/010, "Literal URL patterns skip RE2").
        return SafePattern(source, needle, None)
    try:
        regexp = re2.compile(source, _OPTIONS)
    except re2.error as exc:
        reason = (
            exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        )
        raise PatternError(
            f"pattern {source[:80]!r} is not accepted by RE2 ({' '.join(reason.split())})"
        ) from None
    if regexp.programsize > MAX_PROGRAM_SIZE:
        raise PatternError(
            f"pattern {source[:80]!r} compiles to {regexp.programsize} RE2 instructions, "
            f"more than MAX_PROGRAM_SIZE={MAX_PROGRAM_SIZE}"
        )
    if whole:
        return SafePattern(source, needle, None)
    if _top_level_alternation(source):
        needle = ""
    return SafePattern(source, needle, regexp)


@lru_cache(maxsize=4096)
def compile_pattern(source: str) -> SafePattern:
    """The bank pattern ``source``, compiled once per process.

    Raises:
        PatternError: RE2 refuses it, or it is longer than ``MAX_PATTERN_LENGTH``.
    """
    return _compile(source)


def check_pattern(source: str) -> str:
    """``source`` when it compiles (a pydantic validator's shape); else ``PatternError``."""
    compile_pattern(source)
    return source


@lru_cache(maxsize=4096)
def grading_pattern(source: str) -> SafePattern:
    """A pattern from any source, bank or published transcript: never raises.

    A pattern RE2 refuses is matched literally, as a regex Python could not compile always was.
    """
    try:
        return _compile(source)
    except PatternError:
        return SafePattern(source, source, None)


def linear_regex(source: str) -> Any:
    """A fixed pattern of ours compiled with RE2 (captures kept), for scanning bank text in linear time."""
    options = re2.Options()
    options.log_errors = False
    return re2.compile(source, options)
