"""``dumps``/``dumps_unicode`` are ``json.dumps`` (ASCII / ``ensure_ascii=False``): same text, same error."""

from __future__ import annotations

import json
import random
from typing import Any

from jsonfuzz import outcome, random_value

from apiflow.world.jsontext import dumps, dumps_unicode, loads


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


def _outcome_pos(fn: Any, text: Any) -> tuple[Any, ...]:
    try:
        return ("ok", repr(fn(text)))
    except json.JSONDecodeError as exc:  # the same message at the same place
        return ("error", type(exc), str(exc), exc.pos)
    except Exception as exc:
        return ("error", type(exc), str(exc))


def test_loads_is_json_loads_for_texts_good_and_bad() -> None:
    rng = random.Random(9)
    texts: list[Any] = [
        "", " ", "{}", " {}", "{} ", "\ufeff{}", "[1, 2", '{"a": 1} x', '"\\ud800"', "NaN", "-0.0",
        "1e400", '{"a": {"b": [true, null]}}', "[" * 5000 + "]" * 5000, b"[1]", bytearray(b"{}"), 3,
        _Str('{"a": 1}'), '"x', "{'a': 1}", "[1,]", "\n[1]\n",
    ]  # fmt: skip
    for _ in range(3000):
        text = json.dumps(
            random_value(rng, _LEAVES, _KEYS), ensure_ascii=rng.random() < 0.5, default=str, skipkeys=True
        )
        texts.append(text)
        cut = rng.randrange(len(text) + 1)
        texts.append(text[:cut])  # most are not JSON
        texts.append(text + rng.choice(["", " ", "]", "}", "x", "\t"]))
    for text in texts:
        assert _outcome_pos(loads, text) == _outcome_pos(json.loads, text), text
