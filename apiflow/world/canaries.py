"""Per-trial canaries: the values a bank fixes, made different in every trial at the world's edge.

A bank's card canaries, receipts, minted ids and bearer tokens are literals in its files, so
anyone who has read the released tasks or a transcript knows them. The codec gives each such
literal a per-trial form, ``<literal>~<6 base-36 characters>`` (the suffix is sha256 of the
trial's canary seed and the literal: about 31 bits, different in every trial; the seed is secret
when the run has a canary key, ``apiflow.agent.ids.canary_seed``), and sits between the agent and
the world:

* **outbound** every response (body, text, headers) shows the agent only the per-trial form,
  and says so in an ``x-apiflow-values: per-trial`` header;
* **inbound** the per-trial form is turned back into the literal before the world sees the
  request, so the world's rules and state keep working on bank values, while a *bare*
  literal, or a literal with another trial's suffix, arrives marked (``<literal>~0``) and
  matches nothing: a value copied from the answer key or another trial is refused.

The grader compares against the same per-trial forms (``salt_text``/``salt_pattern``), so a
card or a request carrying a replayed value fails. The world itself stays pure and unchanged;
the codec is a pure function of (literals, seed). docs/design/011-grader-exploit-audit.md.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from apiflow.world.http import HttpRequest, HttpResponse, body_text
from apiflow.world.jsontext import dumps_unicode, loads

CANARY_SHAPE = re.compile(r"(?:[a-z]{2,6}-[0-9a-f]{4,6}-[0-9a-f]{3,4}|tk_[a-z0-9]+(?:_[a-z0-9]+)+)")
"""Literals distinctive enough to salt: minted ids/refs (``smk-e36f-0db4``, ``smkgr-2c8a6c-736``)
and bearer tokens (``tk_ember_18c65b``). Plain words (``committed``) are never salted."""

SEPARATOR = "~"
SUFFIX_CHARS = 6
SALTED = re.compile(f"({CANARY_SHAPE.pattern}){SEPARATOR}([0-9a-z]{{{SUFFIX_CHARS}}})")
"""A per-trial form as it appears in a response (what an agent that reads responses learns)."""

REPLAYED = f"{SEPARATOR}0"
SCOPE_HEADER = ("x-apiflow-values", "per-trial")
"""Sent on every response of a salting world: distinctive values here are this trial's own
(an agent, or a script that names bank values, must take them from the responses)."""
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_PAIR = 36 * 36
_PAIRS = tuple(_ALPHABET[x % 36] + _ALPHABET[x // 36] for x in range(_PAIR))
"""Two suffix digits per entry, least significant first (``suffix``)."""
assert SUFFIX_CHARS == 6  # three pairs

Send = Callable[[HttpRequest], HttpResponse]


def strings_in(value: Any) -> Iterator[str]:
    """Every string leaf under ``value`` (dict values and list items, in document order)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def suffix(seed: int, literal: str) -> str:
    """The per-trial suffix of ``literal`` (6 base-36 characters of sha256(seed, literal)).

    The digits run from the least significant; they are taken two at a time from a table.
    """
    number = int.from_bytes(hashlib.sha256(f"canary|{seed}|{literal}".encode()).digest()[:8], "big")
    rest, first = divmod(number % _PAIR**3, _PAIR)
    third, second = divmod(rest, _PAIR)
    return _PAIRS[first] + _PAIRS[second] + _PAIRS[third]


class CanaryCodec:
    """Translates one trial's canaries between the agent's view and the world's.

    Args:
        literals: Bank values to salt (only those matching ``CANARY_SHAPE`` are kept).
        seed: The trial's canary seed.
    """

    def __init__(self, literals: Iterable[str], seed: int) -> None:
        kept = _kept(frozenset(literals))
        self.forward = {v: f"{v}{SEPARATOR}{suffix(seed, v)}" for v in kept}
        self._out, self._in = _patterns(kept)
        self._kept = kept
        self._escapes: list[tuple[str, str]] | None = None  # salt_pattern's, made on first use
        self._unsalted: dict[str, str] = {}  # _unsalt_text's answers for short texts (a bearer, a URL)

    def __bool__(self) -> bool:
        return bool(self.forward)

    def salt_text(self, text: str) -> str:
        """``text`` with every literal in its per-trial form (what the agent sees)."""
        if self._out is None or not text:
            return text
        return self._out.sub(lambda m: self.forward[m.group(0)], text)

    def salt_value(self, value: Any) -> Any:
        """``salt_text`` over every string inside a JSON value (keys included)."""
        return _walk(value, self.salt_text)

    @property
    def _escaped(self) -> list[tuple[str, str]]:
        if self._escapes is None:
            # re.escape of ``literal~suffix`` is the literal's escape, the separator's, and the suffix
            # as it is (base-36 characters are never escaped).
            self._escapes = [
                (escaped, escaped + _SEPARATOR_ESCAPED + self.forward[v][len(v) + 1 :])
                for v, escaped in zip(self._kept, _escapes(self._kept), strict=True)
            ]
        return self._escapes

    def salt_pattern(self, pattern: str) -> str:
        """A bank regex (URL pattern) rewritten to match the per-trial forms of its literals."""
        for literal, salted in self._escaped:
            if literal in pattern:
                pattern = pattern.replace(literal, salted)
        return pattern

    def _unsalt_text(self, text: str) -> str:
        if self._in is None or not text:
            return text
        known = self._unsalted.get(text)
        if known is not None:
            return known
        result = self._unsalt(text)
        # A pure function of the text for this codec: kept for short texts the agent sends again
        # (its bearer header on every call), bounded so a long trial cannot grow it without end.
        if len(text) <= _MEMO_TEXT and len(self._unsalted) < _MEMO_ENTRIES:
            self._unsalted[text] = result
        return result

    def _unsalt(self, text: str) -> str:
        assert self._in is not None

        def back(match: re.Match[str]) -> str:
            literal, tail = match.group(1), match.group(2)
            if tail and self.forward[literal] == literal + tail:
                return literal
            return literal + REPLAYED  # a bare literal or another trial's suffix: matches nothing

        return self._in.sub(back, text)

    def inbound(self, request: HttpRequest) -> HttpRequest:
        """The request as the world sees it: per-trial forms back to literals, replays marked."""
        if self._in is None:
            return request
        body = request.body
        if body is None:
            pass
        elif type(body) is str or isinstance(body, str):
            body = self._unsalt_text(body)
        elif isinstance(body, dict | list):
            body = _via_json(body, self._unsalt_text, self._in)
        headers = request.headers
        joined = _joined(headers)
        if joined and self._in.search(joined):
            unsalted = {}
            for name, value in headers.items():  # a loop: no comprehension frame per request
                unsalted[name] = self._unsalt_text(value) if isinstance(value, str) else value
            headers = unsalted
        return HttpRequest(request.method, self._unsalt_text(request.url), headers, body)

    def _holds_literal(self, text: str) -> bool:
        """Whether some literal occurs in ``text``: the outbound pattern can match only then.

        A substring test per literal (a task has a handful) is a fraction of the regex's scan, which
        tries the alternation at every character of a body that, most often, holds none of them.
        """
        for literal in self._kept:
            if literal in text:
                return True
        return False

    def outbound(self, response: HttpResponse) -> HttpResponse:
        """The response as the agent sees it: every literal in its per-trial form."""
        if self._out is None:
            return response
        text = response.text if response.text is not None else body_text(response.body)
        headers = dict(response.headers)
        joined = _joined(headers)
        if self._holds_literal(joined) and self._out.search(joined):
            headers = {k: self.salt_text(v) if isinstance(v, str) else v for k, v in headers.items()}
        headers[SCOPE_HEADER[0]] = SCOPE_HEADER[1]
        if not (self._holds_literal(text) and self._out.search(text)):
            # nothing to salt in the body (most responses): the world's own body and text
            return HttpResponse(response.status, headers, response.body, response.text)
        salted_text = self.salt_text(text)
        # Literals hold no JSON-special characters, so salting the serialised text and parsing it
        # back is the salted body (and far cheaper than walking it in Python).
        body = salted_text if isinstance(response.body, str) else loads(salted_text)
        return HttpResponse(
            response.status, headers, body, salted_text if response.text is not None else None
        )

    def wrap(self, send: Send) -> Send:
        """``send`` behind the codec (identity when there is nothing to salt)."""
        if not self:
            return send

        def salted_send(request: HttpRequest) -> HttpResponse:
            return self.outbound(send(self.inbound(request)))

        return salted_send


def _joined(headers: dict[str, Any]) -> str:
    """The string header values joined by newlines (a pattern never spans one), for one search."""
    try:
        return "\n".join(headers.values())  # every value a string: the usual case
    except TypeError:
        return "\n".join(v for v in headers.values() if isinstance(v, str))


_SEPARATOR_ESCAPED = re.escape(SEPARATOR)
_MEMO_TEXT = 512
_MEMO_ENTRIES = 256


@functools.lru_cache(maxsize=1024)
def _kept(literals: frozenset[str]) -> tuple[str, ...]:
    """The literals of a set that are salted, longest first (one set per task: kept across trials)."""
    return tuple(sorted((v for v in literals if CANARY_SHAPE.fullmatch(v)), key=lambda v: (-len(v), v)))


@functools.lru_cache(maxsize=1024)
def _escapes(literals: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(re.escape(v) for v in literals)


@functools.lru_cache(maxsize=1024)
def _patterns(literals: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """(outbound, inbound) patterns for a literal set, compiled once per set (one per task)."""
    if not literals:
        return None, None
    alternation = "|".join(map(re.escape, literals))
    sep = re.escape(SEPARATOR)
    return re.compile(f"(?:{alternation})(?!{sep})"), re.compile(f"({alternation})((?:{sep}[0-9a-z]+)?)")


def _via_json(value: Any, fn: Callable[[str], str], pattern: re.Pattern[str]) -> Any:
    """``fn`` over every string of a JSON value, through its serialisation (unchanged when no match)."""
    text = dumps_unicode(value)
    if not pattern.search(text):
        return value
    try:
        return loads(fn(text))
    except ValueError:  # a replacement that broke the JSON (cannot happen with id-shaped literals)
        return _walk(value, fn)


def _walk(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {fn(k) if isinstance(k, str) else k: _walk(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, fn) for v in value]
    return value
