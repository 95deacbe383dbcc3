"""Answer-card extraction and the three comparators (REFERENCE §5.2, §5.7)."""

from __future__ import annotations

import pytest

from apiflow.grading.answer import (
    compare,
    compare_numeric,
    compare_set,
    compare_string,
    extract_card,
    final_message,
    top_level_objects,
)

# -- card extraction -------------------------------------------------------------------------


def test_fenced_tagged_and_inline_objects_all_count_in_document_order() -> None:
    text = (
        'Inline {"a": 1} then\n```json\n{"b": 2, "a": 3}\n```\nand <json>{"c": 4}</json> '
        'and nested {"d": {"e": 5}}'
    )
    assert top_level_objects(text) == [{"a": 1}, {"b": 2, "a": 3}, {"c": 4}, {"d": {"e": 5}}]
    assert extract_card(text) == {"a": 3, "b": 2, "c": 4, "d": {"e": 5}}


def test_last_object_holding_a_field_wins_but_earlier_fields_survive() -> None:
    text = (
        '```json\n{"status": "draft", "plan_id": "p-1"}\n```\nFinal:\n```json\n{"status": "committed"}\n```'
    )
    assert extract_card(text) == {"status": "committed", "plan_id": "p-1"}


def test_broken_json_is_skipped_and_nested_objects_are_not_top_level_when_outer_parses() -> None:
    assert extract_card('{not json} {"x": {"y": 1}}') == {"x": {"y": 1}}
    assert extract_card("no card at all") == {}


def test_null_field_is_present() -> None:
    card = extract_card('```json\n{"plan_id": null}\n```')
    assert "plan_id" in card and card["plan_id"] is None


def test_reasoning_is_used_only_when_text_is_empty() -> None:
    assert extract_card("", '{"a": 1}') == {"a": 1}
    assert extract_card("   \n", '{"a": 1}') == {"a": 1}
    assert extract_card("I could not finish.", '{"a": 1}') == {}


def test_final_message_skips_empty_turns_and_uses_the_last_non_empty_one() -> None:
    messages = [
        {"role": "assistant", "content": [{"type": "text", "text": '{"a": 1}'}]},
        {
            "role": "assistant",
            "content": [{"type": "reasoning", "reasoning": '{"b": 2}'}, {"type": "text", "text": ""}],
            "tool_calls": [{"id": "1"}],
        },
        {"role": "tool", "content": "trial terminated (clarify): ?", "tool_call_id": "1"},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
    ]
    assert final_message(messages) == ("", '{"b": 2}')
    assert final_message([{"role": "assistant", "content": "plain string"}]) == ("plain string", "")
    assert final_message([{"role": "assistant", "content": []}]) == ("", "")


# -- string ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        ("committed", "committed"),
        ("MAJOR", "major"),
        (True, "true"),
        (False, "false"),
        ("flowRateLpm", "flow_rate_lpm"),
        ("rd_s_05-last", "rd-s-05-last"),
        (47, "47"),
    ],
)
def test_string_passes_case_and_separator_insensitive(got: object, expected: str) -> None:
    assert compare_string(got, expected).passed


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        ("verified-closed", "closed"),
        ("/v3/geofences (definitions)", "/v3/geofences"),
        (None, "x"),
        ("", "x"),
        ({"error": "x"}, "x"),
        (["x"], "x"),
        ("---", "x"),
    ],
)
def test_string_fails_extra_words_and_non_strings(got: object, expected: str) -> None:
    result = compare_string(got, expected)
    assert not result.passed
    assert result.reason == f"{got!r} != expected {expected!r}"


def test_newer_generation_accepts_a_parenthetical_qualifier_only() -> None:
    assert compare_string("/v3/geofences (definitions)", "/v3/geofences", "newer").passed
    assert not compare_string("/v3/geofences (definitions)", "/v3/geofences", "original").passed
    assert not compare_string("verified-closed", "closed", "newer").passed
    assert not compare_string("(closed)", "open", "newer").passed


# -- numeric ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("got", "expected"), [(3, 3), ("3", 3), (51.9244, 51.9301), (3.0, 3), (" 2.5 ", 2.5)]
)
def test_numeric_passes_within_tolerance_and_accepts_numeric_strings(got: object, expected: float) -> None:
    assert compare_numeric(got, expected).passed


def test_numeric_failure_reasons() -> None:
    assert compare_numeric(0.71, 0.7342).reason == "0.71 != 0.7342 (tol ±0.01)"
    assert compare_numeric(5, 52).reason == "5.0 != 52.0 (tol ±0.01)"
    assert compare_numeric(None, 3).reason == "value None is not numeric"
    assert compare_numeric("unknown", 3).reason == "value 'unknown' is not numeric"
    assert compare_numeric([], 3).reason == "value [] is not numeric"
    assert not compare_numeric({"n": 3}, 3).passed


# -- set -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("got", "expected"),
    [
        (["fld-south", "fld-north"], ["fld-north", "fld-south"]),
        (" FLD-North , fld-south", ["fld-north", "fld-south"]),
        ("zone-7f3a, zone-2c19", ["zone-2c19", "zone-7f3a"]),
        ("feeds:read", ["feeds:read"]),
        ("a|b/c", ["a", "b", "c"]),
        (2, ["2"]),
        (None, ["none"]),
    ],
)
def test_set_passes_order_free_after_tokenising(got: object, expected: list[str]) -> None:
    assert compare_set(got, expected).passed


def test_set_splits_only_on_comma_slash_pipe() -> None:
    assert not compare_set("zone-7f3a zone-2c19", ["zone-7f3a", "zone-2c19"]).passed
    result = compare_set("/v1/locations, /v2/pings", ["/v1/locations", "/v2/pings"])
    assert (
        result.reason == "set ['locations', 'pings', 'v1', 'v2'] != expected ['/v1/locations', '/v2/pings']"
    )
    assert compare_set(["feeds:read"], ["feeds:read", "alerts:write"]).reason == (
        "set ['feeds:read'] != expected ['alerts:write', 'feeds:read']"
    )


def test_compare_dispatches_and_refuses_unknown_comparators() -> None:
    assert compare("numeric", "3", 3).passed and compare("set", "a", ["a"]).passed
    assert compare("string", "a", "A").passed
    with pytest.raises(ValueError):
        compare("fuzzy", "a", "a")
