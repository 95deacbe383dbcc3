"""Reading published predicate entries back as specs; entity refs in every encoding."""

from __future__ import annotations

from typing import Any

import pytest

from apiflow.grading import AnswerFieldSpec, DataFlowSpec, NewResponseSpec, WorkspaceValueSpec
from apiflow.grading.published import PublishedSpecError, generation_of, spec_from_published
from apiflow.grading.refs import loads_maybe, parse_ref


def test_each_kind_reads_back_with_its_segment() -> None:
    answer = spec_from_published(
        {
            "label": "answer.n == 3",
            "key": "answer_schema.n",
            "group": "G2",
            "segment": 4,
            "detail": {"field": "n", "expected": 3, "comparator": "numeric", "got": 2},
        }
    )
    assert answer == AnswerFieldSpec(field="n", expected=3, comparator="numeric", segment=4)
    flow = spec_from_published(
        {
            "label": "data_flow#2",
            "group": "G1",
            "segment": None,
            "detail": {
                "from_response_url_pattern": "v3/x",
                "from_body_key": "a.b",
                "from_status": 201,
                "must_be_stored": True,
                "used_in_request_url_pattern": None,
                "explain": "e",
                "prompt_quote": "q",
                "segment": None,
            },
        }
    )
    assert flow == DataFlowSpec(
        from_response_url_pattern="v3/x",
        from_body_key="a.b",
        from_status=201,
        must_be_stored=True,
        explain="e",
        prompt_quote="q",
    )
    new = spec_from_published(
        {
            "label": "new_response#1",
            "group": "G1",
            "segment": None,
            "detail": {"status": None, "method": "POST", "url_pattern": "v3/f", "body_has_keys": []},
        }
    )
    assert new == NewResponseSpec(url_pattern="v3/f", method="POST")
    stored = spec_from_published(
        {
            "label": "workspace_values#1 · v",
            "key": "workspace_values#1.1",
            "group": "G1",
            "segment": 2,
            "detail": {"value": "v"},
        }
    )
    assert stored == WorkspaceValueSpec(value="v", segment=2)


def test_values_outside_our_types_are_kept_as_recorded() -> None:
    spec = spec_from_published(
        {
            "label": "answer.ids == [1, 2]",
            "key": "answer_schema.ids",
            "detail": {"field": "ids", "expected": [1, {"x": 2}], "comparator": "set"},
        }
    )
    assert spec.expected == [1, {"x": 2}]  # type: ignore[union-attr]


def test_unknown_kind_or_missing_parameters_are_refused() -> None:
    with pytest.raises(PublishedSpecError):
        spec_from_published({"label": "llm_judge#1", "detail": {}})
    with pytest.raises(PublishedSpecError):
        spec_from_published({"label": "data_flow#1", "detail": {"from_body_key": "k"}})


def test_generation_marker() -> None:
    assert generation_of({"metadata": {"sub_predicates": {"demoted_predicates": []}}}) == "newer"
    assert generation_of({"metadata": {"sub_predicates": {}}}) == "original"


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [
        ({"kind": "spec", "id": "openapi"}, ("spec", "openapi")),
        ('{"kind": "variable", "id": "token"}', ("variable", "token")),
        ("request:req-3879b3/response:resp-96b9f3ee", ("response", "resp-96b9f3ee")),
        (
            {"kind": "response", "id": "resp-1", "parent": {"kind": "request", "id": "req-1"}},
            ("response", "resp-1"),
        ),
        ("request:mint-token", ("request", "mint-token")),
        ("global:access_token", None),
        ("dev_c_ping_id", None),
        (5, None),
    ],
)
def test_entity_refs_in_every_encoding(ref: object, parsed: tuple[str, str] | None) -> None:
    assert parse_ref(ref) == parsed


def test_loads_maybe_keeps_non_json_text_and_reads_nan() -> None:
    assert loads_maybe("{not json") == "{not json"
    assert loads_maybe('{"a": NaN}')["a"] != loads_maybe('{"a": NaN}')["a"]  # NaN via the stdlib fallback
    assert loads_maybe({"a": 1}) == {"a": 1}


@pytest.mark.parametrize(
    "first, second", [(1, 1.0), (1, True), (0.0, -0.0), ("1", 1), ("a", ["a"]), ("x", "x ")]
)
def test_the_spec_memo_tells_apart_what_equality_does_not(first: object, second: object) -> None:
    def entry(expected: object) -> dict:
        detail = {"field": "n", "expected": expected, "comparator": "string"}
        return {"label": "answer.n", "key": "answer_schema.n", "group": "G2", "segment": 1, "detail": detail}

    alone = spec_from_published(entry(second), {})
    memo: dict[tuple[Any, ...], Any] = {}
    spec_from_published(entry(first), memo)
    after_first = spec_from_published(entry(second), memo)  # a loose key would hand back the first spec
    assert repr(after_first.expected) == repr(alone.expected)
