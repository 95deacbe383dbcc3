"""Entity-ref parsing: three encodings, published pydantic error texts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from apiflow.tools.refs import EntityRef, make_ref, parse_entity_ref
from apiflow.tools.result import ToolError

TAIL = "\n    For further information visit https://errors.pydantic.dev/2.13/v/"


def _error(value: object) -> str:
    with pytest.raises(ToolError) as info:
        parse_entity_ref(value)
    return info.value.message


def test_three_encodings_agree() -> None:
    as_dict = parse_entity_ref({"kind": "spec", "id": "openapi"})
    assert parse_entity_ref('{"kind": "spec", "id": "openapi"}') == as_dict
    assert parse_entity_ref("spec:openapi") == as_dict
    assert str(as_dict) == "spec:openapi"


def test_nested_ref_string_builds_the_parent() -> None:
    ref = parse_entity_ref("request:req-3879b3/response:resp-96b9f3ee")
    assert ref == EntityRef(
        kind="response", id="resp-96b9f3ee", parent=EntityRef(kind="request", id="req-3879b3")
    )
    assert str(ref) == "request:req-3879b3/response:resp-96b9f3ee"


def test_extra_keys_are_ignored() -> None:
    ref = parse_entity_ref({"kind": "variable", "id": "access_token", "scope": "local"})
    assert ref == EntityRef(kind="variable", id="access_token")


def test_id_may_contain_a_colon_and_a_full_ref() -> None:
    ref = parse_entity_ref({"kind": "response", "id": "request:req-78d7f3/response:resp-27c1c274"})
    assert str(ref) == "response:request:req-78d7f3/response:resp-27c1c274"


def test_scope_as_kind_is_a_literal_error() -> None:
    assert _error("global:access_token") == (
        "Invalid entity_ref: 1 validation error for EntityRef\nkind\n"
        "  Input should be 'request', 'response', 'variable', 'spec' or 'handle' "
        "[type=literal_error, input_value='global', input_type=str]" + TAIL + "literal_error"
    )


def test_unquoted_pseudo_json_is_a_literal_error_on_its_first_word() -> None:
    assert "input_value='{kind', input_type=str" in _error('{kind: "spec", id: "openapi"}')


def test_bare_name_is_a_model_type_error_at_the_root() -> None:
    assert _error("dev_c_ping_id") == (
        "Invalid entity_ref: 1 validation error for EntityRef\n"
        "  Input should be a valid dictionary or instance of EntityRef "
        "[type=model_type, input_value='dev_c_ping_id', input_type=str]" + TAIL + "model_type"
    )


def test_string_parent_is_refused_even_inside_a_json_string() -> None:
    message = _error('{"kind": "response", "id": "resp-1", "parent": "request:req-2"}')
    assert message.startswith("Invalid entity_ref: 1 validation error for EntityRef\nparent\n")
    assert "input_value='request:req-2'" in message


def test_missing_id() -> None:
    assert "id\n  Field required [type=missing" in _error({"kind": "spec"})


def test_make_ref_is_the_model_built_with_keywords() -> None:
    # make_ref calls pydantic-core's validator straight: the same model, fields set and errors.
    request = make_ref("request", "req-1")
    for made, built in (
        (request, EntityRef(kind="request", id="req-1", parent=None)),
        (make_ref("response", "resp-2", request), EntityRef(kind="response", id="resp-2", parent=request)),
    ):
        assert made == built and str(made) == str(built)
        assert made.model_fields_set == built.model_fields_set == {"kind", "id", "parent"}
    assert make_ref("response", "resp-2", request).parent is request
    with pytest.raises(ValidationError):
        make_ref("nope", "x")  # type: ignore[arg-type]
