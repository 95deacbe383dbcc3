"""Argument decoding and schema validation: Inspect's (jsonschema Draft 7) messages and order."""

from __future__ import annotations

import pytest

from apiflow.tools.arguments import decode_arguments, validate_arguments
from apiflow.tools.result import ArgumentError
from apiflow.tools.schemas import parameters_for

CASES = [
    ("read", {"entity_ref": "spec:openapi"}),
    ("read", {}),
    ("read", {"entity_ref": 5}),
    ("read", {"entity_ref": None, "scope": 3}),
    ("read", {"entity_ref": ["a"], "extra": 1, "more": 2}),
    ("write", {"entity_ref": {}, "content": True}),
    ("search", {"query": None}),
    ("search", {"kind": "spec"}),
    ("execute", {"protocol": "rest", "method": "GET", "url": "/x", "headers": {}}),
    ("execute", {"request": 1.5, "mode": False}),
    ("clarify", {"question": "why?", "urgency": "high"}),
    ("report_blocked", {}),
]


def _ours(name: str, arguments: dict) -> list[str]:
    schema = parameters_for(name)
    assert schema is not None
    try:
        validate_arguments(arguments, schema)
    except ArgumentError as exc:
        header, *lines = exc.message.split("\n")
        assert header == f"Found {len(lines)} validation errors parsing tool input arguments:"
        return [line.removeprefix("- ") for line in lines]
    return []


@pytest.mark.parametrize(("name", "arguments"), CASES)
def test_messages_match_jsonschema_draft7(name: str, arguments: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = parameters_for(name)
    expected = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(arguments)]
    assert _ours(name, arguments) == expected


def test_published_texts() -> None:
    assert _ours("execute", {"protocol": "rest", "method": "GET", "url": "/x", "headers": {}}) == [
        "Additional properties are not allowed ('headers', 'method', 'protocol', 'url' were unexpected)"
    ]
    assert _ours("read", {}) == ["'entity_ref' is a required property"]


def test_decode_arguments() -> None:
    assert decode_arguments({"a": 1}) == {"a": 1}
    assert decode_arguments(' {"query": "x"} ') == {"query": "x"}
    assert decode_arguments("") == {} and decode_arguments(None) == {}
    with pytest.raises(
        ArgumentError, match=r"^Error parsing the following tool call arguments:\n\n\[1\]\n\n"
    ):
        decode_arguments("[1]")
    with pytest.raises(ArgumentError, match="Error details: Expecting value: line 1 column 1"):
        decode_arguments("not json")
