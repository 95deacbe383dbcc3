"""Workspace determinism and evidence: ids, clock, variables, entities, exchanges."""

from __future__ import annotations

import json
import random
import re

from apiflow.tools import Toolbox, Workspace
from apiflow.tools.workspace import IdFactory, LogicalClock

from .fakes import SPEC_CONTENT, FakeWorld, Seed


def _run_script(id_seed: int) -> list[str]:
    workspace = Workspace([Seed("vault", "client_id", "c")], SPEC_CONTENT, id_seed=id_seed)
    toolbox = Toolbox(workspace, FakeWorld().send)
    out = [
        toolbox.call("execute", {"request": {"method": "GET", "url": "/v2/packets"}}).content
        for _ in range(3)
    ]
    out.append(toolbox.call("read", {"entity_ref": json.loads(out[0])["response_ref"]}).content)
    return out


def test_same_seed_same_results_different_seed_different_ids() -> None:
    assert _run_script(7) == _run_script(7)
    assert _run_script(7)[0] != _run_script(8)[0]


def test_id_shapes_and_no_global_random() -> None:
    state = random.getstate()
    ids = IdFactory(99)
    requests = [ids.request_id() for _ in range(200)]
    responses = [ids.response_id() for _ in range(200)]
    assert random.getstate() == state
    assert all(re.fullmatch(r"req-[0-9a-f]{6}", r) for r in requests)
    assert all(re.fullmatch(r"resp-[0-9a-f]{8}", r) for r in responses)
    assert len(set(requests)) == 200 and len(set(responses)) == 200


def test_logical_clock_is_iso_with_microseconds_and_increasing() -> None:
    clock = LogicalClock()
    stamps = [clock.tick() for _ in range(3)]
    assert stamps == sorted(stamps)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", s) for s in stamps)


def test_variables_and_changed_variables(toolbox: Toolbox, workspace: Workspace) -> None:
    toolbox.call("write", {"entity_ref": "variable:access_token", "content": {"value": "tk_new"}})
    toolbox.call("write", {"entity_ref": "variable:note", "content": {"value": [1]}, "scope": "global"})
    assert workspace.variables() == [
        ("vault", "client_id", "cid_quill_7"),
        ("vault", "client_secret", "csec_quill_b2"),
        ("local", "access_token", "tk_new"),
        ("global", "region", "eu-west"),
        ("global", "note", [1]),
    ]
    assert workspace.changed_variables == {("local", "access_token"), ("global", "note")}


def test_entities_hold_agent_authored_requests_and_handles_only(
    toolbox: Toolbox, workspace: Workspace
) -> None:
    toolbox.call("execute", {"request": {"method": "GET", "url": "/v2/packets"}})
    toolbox.call("write", {"entity_ref": "handle:h1", "content": {"a": 1}})
    kinds = [e.ref.kind for e in workspace.entities.values()]
    assert kinds == ["request", "handle"]
    assert [e.ref.kind for e in workspace.all_entities()] == ["spec", "request", "response", "handle"]


def test_exchanges_record_what_was_sent_in_order(toolbox: Toolbox, workspace: Workspace) -> None:
    first = json.loads(toolbox.call("execute", {"request": {"method": "get", "url": "/v2/packets"}}).content)
    body = {"grant_type": "client_credentials"}
    toolbox.call("execute", {"request": {"method": "POST", "url": "/v2/oauth/token", "body": body}})
    one, two = workspace.exchanges
    assert (
        one.response_ref == first["response_ref"] and one.request_ref == first["response_ref"].split("/")[0]
    )
    assert one.request == {
        "protocol": "rest",
        "method": "GET",
        "url": "/v2/packets",
        "headers": {},
        "body": None,
    }
    assert one.response is not None and one.response.status == 200 and one.network_error is None
    assert two.request["body"] == body and two.response is not None
    assert two.response.body == {"access_token": "tk_quill_5521", "token_type": "Bearer"}


def test_rewritten_entity_keeps_its_place(toolbox: Toolbox, workspace: Workspace) -> None:
    toolbox.call("write", {"entity_ref": "request:a", "content": {"url": "/1"}})
    toolbox.call("write", {"entity_ref": "request:b", "content": {"url": "/2"}})
    toolbox.call("write", {"entity_ref": "request:a", "content": {"url": "/3"}})
    assert json.loads(toolbox.call("search", {"query": "", "kind": "request"}).content) == [
        "request:a",
        "request:b",
    ]
