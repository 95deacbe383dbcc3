"""``dumps``/``dumps_unicode`` are ``json.dumps`` (ASCII / ``ensure_ascii=False``): same text, same error."""

from __future__ import annotations

import json
import random
from typing import Any

from jsonfuzz import outcome, random_value

from apiflow.world.jsontext import dumps, dumps_unicode


class _Str(str):
    pass


_LEAVES: list[Any] = [
    0, -5, 10**30, True, False, None, 2.5, 1e300, -0.0, float("nan"), float("-inf"),
    "", "x\n\"y\"", "é\u2028", "\ud800", _Str("s"), [], {}, (), (1, "a"), {1, 2}, b"x", object(),
]  # fmt: skip
_KEYS: list[Any] = ["a", "\n", "ü", 1, None, True, 2.5, (1,)]


def _unicode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def test_dumps_are_json_dumps_for_random_values() -> None:
    rng = random.Random(8)
    for _ in range(5000):
        value = random_value(rng, _LEAVES, _KEYS)
        assert outcome(dumps, value) == outcome(json.dumps, value), value
        assert outcome(dumps_unicode, value) == outcome(_unicode, value), value


def test_a_cycle_and_a_huge_int_fail_as_json_dumps_fails() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    for value in (cycle, {"a": cycle}, [10**5000]):
        assert outcome(dumps, value) == outcome(json.dumps, value)
        assert outcome(dumps_unicode, value) == outcome(_unicode, value)
    assert outcome(dumps, cycle)[1] is ValueError  # a fresh circular-reference table each call
    assert dumps({"a": [1]}) == dumps({"a": [1]}) == '{"a": [1]}'
