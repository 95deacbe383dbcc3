"""The argument quick check only ever admits what the general schema walk finds valid.

``Toolbox.call`` skips the Draft-7 walk when ``QuickCheck.admits`` says yes, so a wrong "yes"
would let an invalid call through without its published error. Every tool's schema is tried
with argument objects built from a spread of JSON values, valid and not.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from apiflow.tools.arguments import quick_check, validate_arguments
from apiflow.tools.contract import TOOL_FUNCTIONS
from apiflow.tools.result import ArgumentError
from apiflow.tools.schemas import parameters_for

VALUES: list[Any] = [None, True, 0, 1.5, "x", "", {}, {"kind": "variable", "id": "a"}, [], ["x"]]


def _valid(arguments: dict[str, Any], schema: dict[str, Any]) -> bool:
    try:
        validate_arguments(arguments, schema)
    except ArgumentError:
        return False
    return True


@pytest.mark.parametrize("name", [f.__name__ for f in TOOL_FUNCTIONS])
def test_admitted_arguments_have_no_schema_errors(name: str) -> None:
    schema = parameters_for(name)
    assert schema is not None
    check = quick_check(schema)
    assert check is not None, "every tool schema is flat enough for the quick check"
    keys = [*schema["properties"], "unexpected"]
    admitted = rejected = 0
    for size in range(len(keys) + 1):
        for chosen in itertools.combinations(keys, size):
            for values in itertools.product(VALUES, repeat=size) if size <= 2 else [("x",) * size]:
                arguments = dict(zip(chosen, values, strict=True))
                valid = _valid(arguments, schema)
                if check.admits(arguments):
                    admitted += 1
                    assert valid, arguments
                else:
                    rejected += 1
    assert admitted and rejected


def test_the_common_valid_calls_are_admitted() -> None:
    request = {"method": "GET", "url": "/v3/blocks"}
    assert quick_check(parameters_for("execute") or {}).admits({"request": request})  # type: ignore[union-attr]
    ref = {"kind": "variable", "id": "token"}
    write = quick_check(parameters_for("write") or {})
    assert write is not None and write.admits({"entity_ref": ref, "content": {"value": 1}, "scope": "local"})


def test_schemas_beyond_flat_types_get_no_quick_check() -> None:
    assert (
        quick_check(
            {
                "type": "object",
                "properties": {"n": {"type": "integer"}},
                "required": [],
                "additionalProperties": False,
            }
        )
        is None
    )
    assert quick_check({"type": "object", "properties": {}, "required": []}) is None
