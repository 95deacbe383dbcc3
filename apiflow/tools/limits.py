"""Bounds on what a model can make the tools hold or return (docs/design/031-untrusted-model-input.md).

Everything a tool receives was written by the model, so nothing in it may crash, hang or
exhaust the harness: a call over a bound is refused with a tool error that names the bound and
its value (the model can react), the refusal is counted on the trial record, and the trial goes
on. Each bound is a constant of the code; the values sit far above what any task needs (the
largest argument, result and workspace measured over every golden path of ``bank/v1`` are in
the design note), so no honest trial meets one.

One walk (``scan``) checks an argument value for everything at once: JSON-ness (string keys,
finite numbers, JSON types only), depth, size, and unicode that cannot be written as UTF-8 (lone
surrogates, repaired to U+FFFD so the record stays writable).
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Final, NamedTuple

from apiflow.tools.result import ToolError

ARGUMENT_CHARS: Final = 262_144
"""Most characters one tool call's arguments may hold (its compact JSON text, approximately).

A golden call of ``bank/v1`` is under 2 KB; 256 Ki leaves room for a model that copies a whole
response body into a variable, and keeps one call's decode, validation and copy in milliseconds.
"""

ARGUMENT_DEPTH: Final = 64
"""Deepest nesting of objects/arrays in one argument value (the arguments object is depth 1).

API bodies nest a handful of levels; 64 keeps every recursive walk of the value (copy, JSON
encoding, grading) far below Python's recursion limit, which a 100,000-deep array would break.
"""

TOOL_RESULT_CHARS: Final = 1_048_576
"""Most characters of one tool result returned to the model (and kept in the transcript).

Only ``read`` and ``search`` can grow with what the model stored; 1 Mi is four argument bounds,
so a model can always read back what it was allowed to write.
"""

WORKSPACE_ENTITIES: Final = 5_000
"""Most entities plus model-written variables in one workspace.

A trial under the published 500-message cap cannot make more than ~1,000 (an inline execute
makes two); the bound matters when the message cap is lifted, and is checked before a request is
sent, so a refused execute never changes the world without its evidence being recorded.
"""

WORKSPACE_CHARS: Final = 16_777_216
"""Most characters of content a model may store over a trial (write, edit, inline execute).

Counted cumulatively from each storing call's argument size (an overwrite counts again), which
bounds the live workspace from above without measuring it.
"""

TOOL_BOUNDS: Final[dict[str, int]] = {
    "argument_chars": ARGUMENT_CHARS,
    "argument_depth": ARGUMENT_DEPTH,
    "tool_result_chars": TOOL_RESULT_CHARS,
    "workspace_entities": WORKSPACE_ENTITIES,
    "workspace_chars": WORKSPACE_CHARS,
}
"""Every tool bound by the name the tool error and the trial record use."""

_INT_BITS = 13_000  # ~3,900 digits: Python refuses int<->str beyond 4,300 digits (json.dumps would raise)
_PREVIEW_CHARS = 2_000


class LimitError(ToolError):
    """A call refused by a bound; ``limit`` names it (a key of ``TOOL_BOUNDS``)."""

    def __init__(self, limit: str, detail: str) -> None:
        super().__init__(f"{detail} (limit {limit} = {TOOL_BOUNDS[limit]:,}); the call was not run.")
        self.limit = limit


class NotJson(Exception):
    """The value holds something JSON cannot carry (a non-string key, NaN, a set, an object)."""


class Scan(NamedTuple):
    """What ``scan`` found (a NamedTuple: immutable, and built on every tool call).

    Attributes:
        value: The value, with lone surrogates replaced (the same object when nothing changed).
        chars: Approximate compact-JSON size in characters.
        repaired: How many strings had unwritable unicode replaced.
    """

    value: Any
    chars: int
    repaired: int


class _Walk:
    """One scan's running totals.

    The checks and their order are those of the plain recursive walk (a bound is raised at the
    first value that crosses it, in document order); string leaves, by far the most common, are
    handled inline in the container loops instead of through ``value``: one method call per
    leaf was most of a scan's cost (docs/results/030-agent-loop-rounds.md, "Trial cost, round two").
    """

    __slots__ = ("chars", "max_chars", "max_depth", "repaired")

    def __init__(self, max_chars: int, max_depth: int) -> None:
        self.chars, self.repaired = 0, 0
        self.max_chars, self.max_depth = max_chars, max_depth

    def over(self) -> None:
        raise LimitError("argument_chars", f"The arguments hold more than {self.max_chars:,} characters")

    def charge(self, chars: int) -> None:
        self.chars += chars
        if self.chars > self.max_chars:
            self.over()

    def text(self, value: str) -> str:
        self.charge(len(value) + 2)
        if value.isascii():
            return value
        fixed = writable_text(value)
        if fixed is not value:
            self.repaired += 1
        return fixed

    def value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if value is None or isinstance(value, bool):
            self.charge(5)
            return value
        if isinstance(value, int):
            if value.bit_length() > _INT_BITS:
                raise NotJson(f"an integer of {value.bit_length()} bits is too large for JSON")
            self.charge(2 + value.bit_length() // 3)
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise NotJson(f"{value} is not a JSON number")
            self.charge(20)
            return value
        if isinstance(value, dict | list | tuple):
            if depth > self.max_depth:
                raise LimitError("argument_depth", f"The arguments nest deeper than {self.max_depth} levels")
            return self.container(value, depth)
        raise NotJson(f"a {type(value).__name__} is not a JSON value")

    def container(self, value: dict[Any, Any] | list[Any] | tuple[Any, ...], depth: int) -> Any:
        limit = self.max_chars
        self.chars += 2  # inline ``charge``: same charge, same check
        if self.chars > limit:
            self.over()
        inner = depth + 1
        if isinstance(value, dict):
            changed = False
            out: dict[str, Any] = {}
            for key, item in value.items():
                if type(key) is str and key.isascii():  # inline ``text``: same charge, same check
                    self.chars += len(key) + 2
                    if self.chars > limit:
                        self.over()
                    fixed_key = key
                elif isinstance(key, str):
                    fixed_key = self.text(key)
                else:
                    raise NotJson(f"an object key of type {type(key).__name__} is not a JSON string")
                if type(item) is str and item.isascii():
                    # The item's charge (+2) and the pair's (+2) in one check: nothing runs
                    # between the two, and either raises the same error.
                    self.chars += len(item) + 4
                    if self.chars > limit:
                        self.over()
                    out[fixed_key] = item
                    changed = changed or fixed_key is not key
                    continue
                if type(item) is dict or type(item) is list:  # ``value``'s container branch, inline
                    if inner > self.max_depth:
                        raise LimitError(
                            "argument_depth", f"The arguments nest deeper than {self.max_depth} levels"
                        )
                    fixed = self.container(item, inner)
                else:
                    fixed = self.value(item, inner)
                changed = changed or fixed_key is not key or fixed is not item
                out[fixed_key] = fixed
                self.chars += 2
                if self.chars > limit:
                    self.over()
            return out if changed else value
        items = []
        for item in value:
            if type(item) is str and item.isascii():
                self.chars += len(item) + 3
                if self.chars > limit:
                    self.over()
                items.append(item)
                continue
            if type(item) is dict or type(item) is list:  # as in the object loop
                if inner > self.max_depth:
                    raise LimitError(
                        "argument_depth", f"The arguments nest deeper than {self.max_depth} levels"
                    )
                items.append(self.container(item, inner))
            else:
                items.append(self.value(item, inner))
            self.chars += 1
            if self.chars > limit:
                self.over()
        if isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items


def scan(value: Any, max_chars: int = ARGUMENT_CHARS, max_depth: int = ARGUMENT_DEPTH) -> Scan:
    """Check one argument value against the bounds and repair its unicode, in one walk.

    The walk stops at the first bound crossed, so a huge or deep value costs no more than the
    bound itself; recursion never goes deeper than ``max_depth``.

    Raises:
        LimitError: ``argument_chars`` or ``argument_depth``.
        NotJson: The value is not JSON data.
    """
    kind = type(value)
    if kind is dict or kind is list:
        chars = _plain_chars(value, max_chars, max_depth)
        if chars >= 0:
            return Scan(value, chars, 0)
    walk = _Walk(max_chars, max_depth)
    fixed = walk.value(value, 1)
    return Scan(fixed, walk.chars, walk.repaired)


_SMALL_INT = 1024
_SMALL_INT_CHARGE = tuple(2 + abs(n).bit_length() // 3 for n in range(-_SMALL_INT + 1, _SMALL_INT))
"""``_Walk``'s charge of each int in (-1024, 1024), indexed by ``n + 1023``."""


def _plain_chars(value: dict[Any, Any] | list[Any], max_chars: int, max_depth: int) -> int:
    """``scan``'s size of an argument value that is plain JSON data within the bounds, else -1.

    Plain: plain dicts with string keys, plain lists, strings without lone surrogates, bools,
    None, finite floats, ints JSON can write, no deeper than ``max_depth``, no larger than
    ``max_chars``. Nearly every call is plain, and for such a value the walk would repair nothing,
    return the value itself and raise nothing, so only its size is needed: the charges are summed
    here in one loop, without a Python call per container or a method call per string (every
    string is appended to one text, measured and checked for unicode once). Anything else (-1)
    goes to ``_Walk``, which alone decides errors and their order (a bound crossed before some
    other error, in document order) and repairs. The loop gives up at the first item or
    container met past the bound, so a huge value costs no more than the bound here either
    (but for the strings of that one container, which are copied once: model text is
    length-checked before it is decoded, so only the harness's own objects can be that large).
    """
    texts = ""  # every key and string leaf, concatenated
    chars = 0  # every charge but the strings' lengths
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending[-1]
        del pending[-1]  # a pop without a method call
        if depth > max_depth or chars + len(texts) > max_chars:
            return -1
        chars += 2
        inner = depth + 1
        if type(node) is dict:
            for key in node:
                if type(key) is not str:
                    return -1
                texts += key
                chars += 3  # a pair's key quotes and colon, on top of what its item costs below
            items: Any = node.values()
        else:
            items = node
        for item in items:
            kind = type(item)
            if kind is str:
                texts += item
                chars += 3  # the item's quotes and its separator
                if chars > max_chars:  # every item adds to chars: a wide container stops here
                    return -1
                continue
            chars += 1  # its separator
            if chars > max_chars:
                return -1
            if kind is dict or kind is list:
                pending += ((item, inner),)
            elif item is None or kind is bool:
                chars += 5
            elif kind is int:
                if -_SMALL_INT < item < _SMALL_INT:
                    chars += _SMALL_INT_CHARGE[item + _SMALL_INT - 1]
                else:
                    bits = item.bit_length()
                    if bits > _INT_BITS:
                        return -1
                    chars += 2 + bits // 3
            elif kind is float and item - item == 0.0:  # finite (inf - inf and NaN are NaN)
                chars += 20
            else:
                return -1
    chars += len(texts)
    if chars > max_chars:
        return -1
    if not texts.isascii():
        try:
            texts.encode()  # no string holds a lone surrogate (a pair is two code points too)
        except UnicodeEncodeError:
            return -1
    return chars


def writable_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same object when it has none).

    A lone surrogate (``"\\ud800"``, which ``json.loads`` accepts) has no UTF-8 form: left in,
    it would make the trial record unwritable. A surrogate *pair* written as two code units is
    joined into its character, as a UTF-16 decoder would.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_BOUNDED = json.JSONDecoder(parse_constant=_reject_constant)
"""``json.loads(text, parse_constant=_reject_constant)`` builds this decoder on every call."""


def loads_bounded(text: str) -> Any:
    """``json.loads`` for model-written text: bounded size and depth, no NaN/Infinity.

    Raises:
        LimitError: The text is longer than ``ARGUMENT_CHARS`` or nests deeper than ``ARGUMENT_DEPTH``.
        ValueError: The text is not JSON (the message is ``json``'s own).
    """
    if len(text) > ARGUMENT_CHARS:
        raise LimitError("argument_chars", f"The JSON text holds {len(text):,} characters")
    try:
        if type(text) is str and not text.startswith("\ufeff"):
            decoded = _BOUNDED.decode(text)  # what json.loads(text, parse_constant=...) runs, one decoder
        else:
            decoded = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise LimitError(
            "argument_depth", f"The JSON text nests deeper than {ARGUMENT_DEPTH} levels"
        ) from None
    try:
        return scan(decoded).value
    except NotJson as exc:
        raise ValueError(str(exc)) from None


def preview(value: Any, limit: int = _PREVIEW_CHARS) -> str:
    """A short, always-writable rendering of any value, for a record or an error message.

    Never calls ``repr``/``str`` on an arbitrary object (either could raise or run for long): a
    value JSON cannot carry shows as ``<typename>``; containers are cut to a few levels and items.
    """
    text = value[: limit + 1] if isinstance(value, str) else json.dumps(_pruned(value, 6), ensure_ascii=False)
    text = writable_text(text)
    return text if len(text) <= limit else text[:limit] + "…"


def _pruned(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return value[:_PREVIEW_CHARS]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= 64 else f"<int of {value.bit_length()} bits>"
    if isinstance(value, float):
        return value if math.isfinite(value) else f"<{value}>"
    if isinstance(value, dict | list | tuple):
        if depth == 0:
            return "…"
        if isinstance(value, dict):
            items = itertools.islice(value.items(), 50)
            return {
                (k if isinstance(k, str) else f"<{type(k).__name__}>"): _pruned(v, depth - 1)
                for k, v in items
            }
        return [_pruned(v, depth - 1) for v in itertools.islice(value, 50)]
    return f"<{type(value).__name__}>"
