"""The tools over the real world engine and the sample bank (no agent, no model)."""

from __future__ import annotations

import json

import pytest

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.tools import Toolbox, Workspace
from apiflow.world import WorldSession

BANK = load_bank(DEFAULT_BANK)


def _trial(task_id: str, seed: int = 3) -> tuple[Toolbox, Workspace, WorldSession]:
    task = BANK.task(task_id)
    session = WorldSession(BANK.world_of(task), seed=seed, state_overrides=task.world_state)
    workspace = Workspace(task.seed, session.spec_content(), id_seed=seed)
    return Toolbox(workspace, session.send), workspace, session


def _golden_results(task_id: str, seed: int = 3) -> list[str]:
    toolbox, _, _ = _trial(task_id, seed)
    outputs = []
    for step in BANK.task(task_id).golden:
        for call in step.calls:
            result = toolbox.call(call.name, call.arguments)
            assert result.error is None, (task_id, call, result.error)
            outputs.append(result.content)
    return outputs


@pytest.mark.parametrize("task_id", list(BANK.tasks))
def test_golden_solution_runs_through_the_tools_without_errors(task_id: str) -> None:
    outputs = _golden_results(task_id)
    statuses = [json.loads(o)["status"] for o in outputs if o.startswith('{"response_ref"')]
    assert statuses and all(isinstance(s, int) for s in statuses)


def test_same_seed_same_tool_results() -> None:
    task_id = next(iter(BANK.tasks))
    assert _golden_results(task_id, 11) == _golden_results(task_id, 11)


def test_spec_server_absolute_urls_empty_requests_and_other_protocols() -> None:
    toolbox, workspace, session = _trial(next(iter(BANK.tasks)))
    spec = json.loads(toolbox.call("read", {"entity_ref": "spec:openapi"}).content)["content"]
    path = next(iter(spec["document"]["paths"]))
    absolute = json.loads(
        toolbox.call("execute", {"request": {"method": "GET", "url": session.server_url + path}}).content
    )
    relative = json.loads(toolbox.call("execute", {"request": {"method": "GET", "url": path}}).content)
    assert absolute["status"] == relative["status"]
    assert set(absolute["headers"]) >= {"date", "server", "content-length"}
    empty = json.loads(toolbox.call("execute", {"request": {}}).content)
    assert (empty["status"], empty["body_preview"]) == (404, '{"detail": "Not Found"}')
    for request in (
        {"protocol": "graphql", "query": "{ a }"},
        {"protocol": "mcp", "tool": "list", "arguments": {}},
    ):
        out = json.loads(toolbox.call("execute", {"request": request}).content)
        assert (out["status"], out["body_preview"]) == (404, '{"detail": "Not Found"}')
    elsewhere = json.loads(toolbox.call("execute", {"request": {"url": "http://example.invalid/x"}}).content)
    assert elsewhere["error"] == "network: ConnectError: All connection attempts failed"
    assert workspace.exchanges[-1].network_error == elsewhere["error"]


def test_header_value_not_a_string_is_refused_before_the_world() -> None:
    toolbox, workspace, session = _trial(next(iter(BANK.tasks)))
    result = toolbox.call(
        "execute", {"request": {"url": "/v3/x", "headers": {"Authorization": {"token": "t"}}}}
    )
    assert result.error == {
        "type": "unknown",
        "message": "execute failed: Header value must be str or bytes, not <class 'dict'>",
    }
    assert session.requests_served == 0 and workspace.exchanges == []
