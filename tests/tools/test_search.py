"""Search semantics: whole-string, case-insensitive, ids and content, published order and cap."""

from __future__ import annotations

import json

from apiflow.tools import Toolbox


def _search(toolbox: Toolbox, query: str, kind: str | None = None) -> list:
    args: dict = {"query": query} if kind is None else {"query": query, "kind": kind}
    result = toolbox.call("search", args)
    assert result.error is None
    return json.loads(result.content)


def test_empty_query_lists_spec_then_variables_in_scope_order(toolbox: Toolbox) -> None:
    assert _search(toolbox, "") == [
        "spec:openapi",
        {"kind": "variable", "id": "client_id", "scope": "vault"},
        {"kind": "variable", "id": "client_secret", "scope": "vault"},
        {"kind": "variable", "id": "access_token", "scope": "local"},
        {"kind": "variable", "id": "region", "scope": "global"},
    ]
    assert _search(toolbox, "", "") == _search(toolbox, "", None) == _search(toolbox, "")


def test_query_is_one_case_insensitive_substring(toolbox: Toolbox) -> None:
    assert _search(toolbox, "CLIENT_CREDENTIALS") == ["spec:openapi"]
    assert _search(toolbox, "seed packets") == ["spec:openapi"]
    assert _search(toolbox, "packets OR token") == []
    assert _search(toolbox, "client") == [
        "spec:openapi",
        {"kind": "variable", "id": "client_id", "scope": "vault"},
        {"kind": "variable", "id": "client_secret", "scope": "vault"},
    ]


def test_variables_match_by_name_only(toolbox: Toolbox) -> None:
    assert _search(toolbox, "cid_quill", "variable") == []
    assert _search(toolbox, "SECRET", "variable") == [
        {"kind": "variable", "id": "client_secret", "scope": "vault"}
    ]


def test_requests_and_responses_by_creation_and_kind_filter(toolbox: Toolbox) -> None:
    first = json.loads(toolbox.call("execute", {"request": {"method": "GET", "url": "/v2/packets"}}).content)
    second = json.loads(toolbox.call("execute", {"request": {"method": "GET", "url": "/v2/missing"}}).content)
    r1, r2 = first["response_ref"], second["response_ref"]
    q1, q2 = r1.split("/")[0], r2.split("/")[0]
    assert _search(toolbox, "/v2/") == ["spec:openapi", q1, r1, q2, r2]
    assert _search(toolbox, "brandywine") == [r1]
    assert _search(toolbox, "resp-", "response") == [r1, r2]
    assert _search(toolbox, "v2", "request") == [q1, q2]
    assert _search(toolbox, "", "handle") == []
    assert _search(toolbox, "", "nonsense") == []


def test_entity_hits_are_capped_at_fifty_then_variables_follow(toolbox: Toolbox) -> None:
    for i in range(30):
        toolbox.call("execute", {"request": {"method": "GET", "url": f"/v2/packets?page={i}"}})
    toolbox.call("write", {"entity_ref": "variable:packets_total", "content": {"value": 40}})
    hits = _search(toolbox, "packets")
    assert len(hits) == 51
    assert hits[0] == "spec:openapi" and hits[-1] == {
        "kind": "variable",
        "id": "packets_total",
        "scope": "local",
    }
