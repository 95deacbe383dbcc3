"""The bounds scan with inlined string leaves agrees with the plain recursive walk it replaced.

``limits.scan`` handles ASCII string leaves inside its container loops (docs/results/030-agent-loop-rounds.md,
"Trial cost, round two"). The reference below is the walk as it was: one method per value,
one charge per step. Both must give the same value identity, size, repair count and the same
error (type and message) for every value, including values that cross a bound mid-way.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from apiflow.tools import limits
from apiflow.tools.limits import LimitError, NotJson, Scan, scan, writable_text
from apiflow.tools.toolbox import Toolbox
from apiflow.tools.workspace import Workspace


class _Reference:
    def __init__(self, max_chars: int, max_depth: int) -> None:
        self.chars, self.repaired, self.max_chars, self.max_depth = 0, 0, max_chars, max_depth

    def charge(self, chars: int) -> None:
        self.chars += chars
        if self.chars > self.max_chars:
            raise LimitError("argument_chars", f"The arguments hold more than {self.max_chars:,} characters")

    def text(self, value: str) -> str:
        self.charge(len(value) + 2)
        fixed = writable_text(value)
        self.repaired += fixed is not value
        return fixed

    def value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if value is None or isinstance(value, bool):
            self.charge(5)
            return value
        if isinstance(value, int):
            if value.bit_length() > limits._INT_BITS:
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
            self.charge(2)
            if isinstance(value, dict):
                out, changed = {}, False
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise NotJson(f"an object key of type {type(key).__name__} is not a JSON string")
                    fixed_key, fixed = self.text(key), self.value(item, depth + 1)
                    changed = changed or fixed_key is not key or fixed is not item
                    out[fixed_key] = fixed
                    self.charge(2)
                return out if changed else value
            items = []
            for item in value:
                items.append(self.value(item, depth + 1))
                self.charge(1)
            same = isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True))
            return value if same else items
        raise NotJson(f"a {type(value).__name__} is not a JSON value")


class _Key(str):
    """A str subclass: takes the general path, not the inline one."""


def _leaf(rng: random.Random) -> Any:
    pick = rng.randrange(12)
    if pick < 5:
        return "".join(rng.choice("ab-_/ ") for _ in range(rng.randrange(0, 40)))
    return [
        None,
        rng.random() < 0.5,
        rng.randrange(-(10**12), 10**12),
        rng.random() * 100,
        "caf\u00e9",
        "lone \ud800 surrogate",
        _Key("sub"),
    ][pick - 5]


def _value(rng: random.Random, depth: int) -> Any:
    if depth > 4 or rng.random() < 0.35:
        return _leaf(rng)
    if rng.random() < 0.5:
        keys = ["k", "key-\u00e9", "\udc00bad", "long" * 5, _Key("subkey")]
        return {rng.choice(keys) + str(i): _value(rng, depth + 1) for i in range(rng.randrange(0, 6))}
    items = [_value(rng, depth + 1) for _ in range(rng.randrange(0, 6))]
    return tuple(items) if rng.random() < 0.2 else items


def _outcome(run: Any) -> Any:
    try:
        return ("ok", *run())
    except (LimitError, NotJson) as exc:
        return (type(exc).__name__, str(exc))


@pytest.mark.parametrize("seed", range(4))
def test_scan_matches_the_reference_walk(seed: int) -> None:
    rng = random.Random(seed)
    bad = [math.nan, {1: "x"}, {"a": {"b": object()}}, 1 << 20_000]
    for trial in range(400):
        value = _value(rng, 0)
        if trial % 10 == 0:
            value = {"v": value, "bad": rng.choice(bad)}
        max_chars = rng.choice([10, 40, 120, 400, limits.ARGUMENT_CHARS])
        max_depth = rng.choice([2, 3, limits.ARGUMENT_DEPTH])

        def new(v: Any = value, c: int = max_chars, d: int = max_depth) -> tuple[Any, ...]:
            got = scan(v, c, d)
            return got.value is v, got.value, got.chars, got.repaired

        def ref(v: Any = value, c: int = max_chars, d: int = max_depth) -> tuple[Any, ...]:
            walk = _Reference(c, d)
            fixed = walk.value(v, 1)
            return fixed is v, fixed, walk.chars, walk.repaired

        assert _outcome(new) == _outcome(ref), (value, max_chars, max_depth)


def test_toolbox_takes_a_clean_scan_of_the_same_object_only() -> None:
    def box() -> Toolbox:
        return Toolbox(Workspace([], {"format": "openapi"}, 1), lambda request: None)  # type: ignore[arg-type,return-value]

    arguments = {"entity_ref": {"kind": "variable", "id": "note"}, "content": {"text": "hello"}}
    plain = box()
    plain.call("write", arguments)
    reused = box()
    reused.call("write", arguments, scan(arguments))
    assert reused.workspace.stored_chars == plain.workspace.stored_chars > 0
    # A scan of another object, or one that repaired something, is not taken: the call scans itself.
    other = box()
    other.call("write", arguments, Scan(dict(arguments), 10**9, 0))
    repaired = box()
    repaired.call("write", arguments, Scan(arguments, 10**9, 1))
    assert other.workspace.stored_chars == repaired.workspace.stored_chars == plain.workspace.stored_chars


def _plain(rng: random.Random, depth: int) -> Any:
    """Plain JSON data: what ``limits._plain_chars`` sizes without the walk."""
    if depth > 4 or rng.random() < 0.35:
        return rng.choice(
            [
                None,
                rng.random() < 0.5,
                rng.randrange(-2000, 2000),
                rng.randrange(-(10**30), 10**30),
                rng.random() * 100,
                -0.0,
                "".join(rng.choice('ab-_/ "\\\u00e9\u4e2d\U0001f600') for _ in range(rng.randrange(0, 20))),
            ]
        )
    if rng.random() < 0.5:
        return {
            rng.choice(["k", "key-\u00e9", ""]) + str(i): _plain(rng, depth + 1)
            for i in range(rng.randrange(0, 6))
        }
    return [_plain(rng, depth + 1) for _ in range(rng.randrange(0, 6))]


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("seed", range(3))
def test_plain_values_are_sized_in_one_loop_as_the_walk_sizes_them(seed: int) -> None:
    # scan's shortcut for plain data: the same size as the reference walk, and it declines (-1, the
    # walk then decides) as soon as the value is past a bound, so it never words an error itself.
    rng = random.Random(seed)
    big, deep = limits.ARGUMENT_CHARS, limits.ARGUMENT_DEPTH
    for _ in range(300):
        value = {"v": _plain(rng, 0)}
        walk = _Reference(big, deep)
        assert walk.value(value, 1) is value and walk.repaired == 0
        assert limits._plain_chars(value, big, deep) == walk.chars
        assert limits._plain_chars(value, walk.chars, deep) == walk.chars
        assert limits._plain_chars(value, walk.chars - 1, deep) == -1
        assert limits._plain_chars(value, big, _depth(value) - 1) == -1
        assert scan(value) == Scan(value, walk.chars, 0)
    # Anything not plain is left to the walk: a tuple, a subclass, a lone surrogate, a non-string
    # key, a number JSON cannot write, a cycle.
    cycle: list[Any] = []
    cycle.append(cycle)
    for odd in ((1,), _Key("k"), "\ud800", {1: 2}, math.inf, math.nan, 1 << 20_000, object(), cycle):
        assert limits._plain_chars({"v": odd}, big, deep) == -1
        assert limits._plain_chars([odd], big, deep) == -1
    assert limits._plain_chars({_Key("k"): 1}, big, deep) == -1
