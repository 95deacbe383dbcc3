"""``indented`` is ``json.dumps(value, indent=2)``: the same text, or the same error, for any value."""

from __future__ import annotations

import json
import random
from typing import Any

from jsonfuzz import outcome, random_value

from apiflow.tools.pretty import indented


class _Str(str):
    pass


_LEAVES: list[Any] = [
    0, -5, 10**30, True, False, None, 2.5, 1e300, -0.0, 3.0, float("nan"), float("inf"),
    "", "x\n\"y\"", "é\u2028", "\ud800", [], {}, (), (1, "a"), _Str("s"),
]  # fmt: skip
_KEYS: list[Any] = ["a", "b", "\n", "ü", 1, None, True, 2.5]


def _plain(value: Any) -> str:
    return json.dumps(value, indent=2)


def test_indented_is_json_dumps_indent_2_for_random_values() -> None:
    rng = random.Random(5)
    for _ in range(5000):
        value = random_value(rng, _LEAVES, _KEYS)
        assert outcome(indented, value) == outcome(_plain, value), value


def test_indented_leaves_deep_cyclic_and_huge_values_to_json() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(150):
        node.append([])
        node = node[0]
    cycle: list[Any] = []
    cycle.append(cycle)
    for value in (deep, cycle, [10**5000], {"a": {(1, 2): 3}}):
        assert outcome(indented, value) == outcome(_plain, value)


def test_a_read_of_a_response_is_the_pretty_json_of_its_entity() -> None:
    content = {
        "status": 200,
        "headers": {"content-type": "application/json", "x-apiflow-values": "per-trial"},
        "body": {
            "items": [{"id": "smk-e36f-0db4~a1b2c3", "amount": 12.5, "ok": True, "tags": []}],
            "next": None,
        },
        "url": "/v1/items?page=2",
        "method": "GET",
    }
    value = {"ref": "request:req-1/response:resp-2", "content": content, "updated_at": "2026-01-01"}
    assert indented(value) == _plain(value)
