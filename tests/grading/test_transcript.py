"""Evidence rebuilt from transcript messages: requests, responses, workspace changes, endings."""

from __future__ import annotations

import pytest

from apiflow.grading import UNKNOWN, evidence_from_transcript

from .helpers import Script


def test_inline_requests_as_objects_or_json_strings() -> None:
    s = Script()
    s.execute({"method": "post", "url": "/v3/token", "body": "grant_type=client_credentials"}, body={"t": 1})
    s.execute({"url": "/v3/plans", "headers": {"Authorization": "Bearer tk"}}, body=[1], as_string=True)
    first, second = s.evidence().exchanges
    assert (first.method, first.url, first.body) == ("POST", "/v3/token", "grant_type=client_credentials")
    assert "grant_type=client_credentials" in first.text
    assert (second.method, second.index) == ("GET", 1)
    assert "Bearer tk" in second.text and second.response_body == [1]


def test_target_uses_the_written_request_after_shallow_edits() -> None:
    s = Script()
    s.write_request("commit", {"method": "POST", "url": "/v3/plans/p/commit", "body": {"confirm": False}})
    s.edit_request("commit", {"body": {"confirm": True}})
    s.execute(target="request:commit", body={"status": "committed"})
    (exchange,) = s.evidence().exchanges
    assert exchange.url == "/v3/plans/p/commit" and exchange.body == {"confirm": True}
    assert s.evidence().entities == {
        "request:commit": {"method": "POST", "url": "/v3/plans/p/commit", "body": {"confirm": True}}
    }


def test_target_can_name_a_request_created_by_an_inline_execute() -> None:
    s = Script()
    ref = s.execute({"method": "GET", "url": "/v3/fields"}, body={})
    s.execute(target=ref.split("/")[0], body={})
    assert [e.url for e in s.evidence().exchanges] == ["/v3/fields", "/v3/fields"]


def test_failed_tool_calls_leave_no_evidence() -> None:
    s = Script()
    s.call("execute", {"request": "not json"}, "", error={"type": "unknown", "message": "bad"})
    s.call(
        "write",
        {"entity_ref": {"kind": "variable", "id": "x"}, "content": {"value": 1}},
        "",
        error={"type": "unknown", "message": "bad"},
    )
    ev = s.evidence()
    assert ev.exchanges == () and dict(ev.variables) == {} and ev.tool_call_count == 2


def test_variables_keep_their_final_value_per_scope_including_unvalidated_scopes() -> None:
    s = Script()
    s.write_variable("token", "a")
    s.write_variable("token", "b")
    s.write_variable("token", "g", scope="global")
    s.write_variable("odd", 1, scope=">")
    ev = s.evidence()
    assert dict(ev.variables) == {("local", "token"): "b", ("global", "token"): "g", (">", "odd"): 1}
    assert ev.new_variable_count == 3


def test_cut_preview_is_unknown_until_read() -> None:
    s = Script()
    preview = "{" + "x" * 599 + "…"
    ref = s.execute({"url": "/openapi.json"}, preview=preview)
    exchange = s.evidence().exchanges[0]
    assert exchange.response_body is UNKNOWN and exchange.preview == preview
    s.read_response(ref, {"openapi": "3.1.0"})
    assert s.evidence().exchanges[0].response_body == {"openapi": "3.1.0"}


def test_non_json_preview_is_kept_as_text() -> None:
    s = Script()
    s.execute({"url": "/health"}, preview="ok")
    assert s.evidence().exchanges[0].response_body == "ok"


def test_endings_and_abstention() -> None:
    s = Script()
    s.abstain("report_blocked", "no write scope")
    ev = s.evidence()
    assert ev.abstained == "report_blocked" and ev.abstention is not None
    assert ev.abstention.reason == "no write scope" and ev.ending == "report_blocked"

    s = Script()
    s.call("clarify", {"question": "?"}, "", error={"type": "parsing", "message": "bad"})
    s.say("answer")
    assert s.evidence().abstained is None and s.evidence().ending == "answered"

    s = Script()
    s.execute({"url": "/v3/x"}, body={})
    assert s.evidence().ending == "limit"
    assert evidence_from_transcript({"messages": []}).ending == "no_answer"


def test_parallel_calls_pair_results_by_id_within_the_turn() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [],
            "tool_calls": [
                {"id": "a", "name": "execute", "arguments": {"request": {"url": "/v3/one"}}},
                {"id": "b", "name": "execute", "arguments": {"request": {"url": "/v3/two"}}},
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "b",
            "function": "execute",
            "content": '{"response_ref": "request:req-2/response:resp-2", "status": 200, "body_preview": "{}"}',
        },
        {
            "role": "tool",
            "tool_call_id": "a",
            "function": "execute",
            "content": '{"response_ref": "request:req-1/response:resp-1", "status": 404, "body_preview": "{}"}',
        },
    ]
    ev = evidence_from_transcript({"messages": messages})
    assert [(e.url, e.status) for e in ev.exchanges] == [("/v3/two", 200), ("/v3/one", 404)]


def test_repeated_or_missing_call_ids_fall_back_to_the_tool_name() -> None:
    ok = '{"response_ref": "request:req-1/response:resp-1", "status": 200, "body_preview": "{}"}'
    messages = [
        {
            "role": "assistant",
            "content": [],
            "tool_calls": [
                {"id": "call_0", "name": "execute", "arguments": {"request": {"url": "/v3/one"}}},
                {
                    "id": "call_0",
                    "name": "write",
                    "arguments": {"entity_ref": "variable:x", "content": {"value": 1}},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_0", "function": "execute", "content": ok},
        {"role": "tool", "tool_call_id": None, "function": "write", "content": "variable local:x written"},
    ]
    ev = evidence_from_transcript({"messages": messages})
    assert [e.url for e in ev.exchanges] == ["/v3/one"] and dict(ev.variables) == {("local", "x"): 1}


@pytest.mark.parametrize(
    "entity_ref",
    [
        '{"kind": "response", "id": "resp-00000001"}',
        '{"kind": "resp\\u006fnse", "id": "resp-00000001"}',  # the kind hidden behind a JSON escape
        "request:req-000001/response:resp-00000001",
        '"response:resp-00000001"',
    ],
)
def test_a_read_reveals_a_cut_body_whatever_the_ref_encoding(entity_ref: str) -> None:
    s = Script()
    ref = s.execute({"url": "/openapi.json"}, preview="{" + "x" * 599 + "…")
    s.read_response(ref, {"full": True})
    s.messages[-2]["tool_calls"][0]["arguments"]["entity_ref"] = entity_ref
    assert s.evidence().exchanges[0].response_body == {"full": True}


def test_a_read_of_another_entity_reveals_nothing() -> None:
    s = Script()
    ref = s.execute({"url": "/openapi.json"}, preview="{" + "x" * 599 + "…")
    s.read_response(ref, {"full": True})
    s.messages[-2]["tool_calls"][0]["arguments"]["entity_ref"] = "variable:resp-00000001"
    assert s.evidence().exchanges[0].response_body is UNKNOWN
