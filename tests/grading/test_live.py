"""Live grading: a real Workspace + Toolbox over the sample bank's world.

Each sample task's golden solution is replayed through the real tools and graded from
the workspace. It must pass; a blank run must fail; the golden path with a wrong card
value must fail on G2 only; the golden path without the key response must fail on G1.
The same trial regraded from its messages alone must grade the same.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from apiflow.bank import DEFAULT_BANK, Task, load_bank
from apiflow.grading import DataFlowSpec, evidence_from_transcript, evidence_from_workspace, grade
from apiflow.grading.spec import AnswerFieldSpec
from apiflow.tools import Toolbox, Workspace
from apiflow.world import WorldSession

BANK = load_bank(DEFAULT_BANK)
REF = re.compile(r"\{\{ref:(\d+)\}\}")


def _resolve(value: Any, refs: dict[int, str]) -> Any:
    if isinstance(value, str):
        return REF.sub(lambda m: refs.get(int(m.group(1)), "request:none/response:none"), value)
    if isinstance(value, dict):
        return {k: _resolve(v, refs) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, refs) for v in value]
    return value


def _url(arguments: dict[str, Any]) -> str:
    request = arguments.get("request")
    request = json.loads(request) if isinstance(request, str) else request
    return str(request.get("url", "")) if isinstance(request, dict) else ""


def play(
    task: Task, *, skip_url: str | None = None, card: dict[str, Any] | None = None, blank: bool = False
) -> tuple[Workspace, list[dict[str, Any]]]:
    """Replay the golden calls through real tools; ``skip_url`` drops executes whose URL matches it."""
    session = WorldSession(BANK.worlds[task.world], 7, state_overrides=task.world_state)
    workspace = Workspace(list(task.seed), session.spec_content(), id_seed=7)
    toolbox = Toolbox(workspace, session.send)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": task.prompt},
    ]
    refs: dict[int, str] = {}
    n_exec = n_call = 0
    for step in [] if blank else task.golden:
        for call in step.calls:
            arguments = _resolve(call.arguments, refs)
            index = n_exec if call.name == "execute" else None
            n_exec += call.name == "execute"
            if index is not None and skip_url and re.search(skip_url, _url(arguments)):
                continue
            n_call += 1
            result = toolbox.call(call.name, arguments)
            messages.append(
                {
                    "role": "assistant",
                    "content": [],
                    "tool_calls": [{"id": f"c{n_call}", "name": call.name, "arguments": arguments}],
                }
            )
            tool: dict[str, Any] = {
                "role": "tool",
                "content": result.content,
                "tool_call_id": f"c{n_call}",
                "function": call.name,
            }
            if result.error:
                tool["error"] = result.error
            messages.append(tool)
            if index is not None and not result.error:
                ref = json.loads(result.content).get("response_ref")
                if ref:
                    refs[index] = ref
    final = {} if blank else dict(card if card is not None else task.expected_card)
    text = "" if blank else "Done.\n\n```json\n" + json.dumps(final) + "\n```"
    messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
    return workspace, messages


def graded(task: Task, **kw: Any) -> Any:
    workspace, messages = play(task, **kw)
    return grade(
        task.predicates, task.checkpoints, task.constraints, evidence_from_workspace(workspace, messages)
    )


TASKS = list(BANK.tasks.values())


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_golden_passes_and_regrading_its_messages_agrees(task: Task) -> None:
    workspace, messages = play(task)
    live = grade(
        task.predicates, task.checkpoints, task.constraints, evidence_from_workspace(workspace, messages)
    )
    assert live.verdict == "C", live.failure_reason
    assert live.determinate and all(c["hit"] for c in live.checkpoints)
    replayed = grade(task.predicates, [], [], evidence_from_transcript({"messages": messages}))
    assert [r.passed for r in replayed.results] == [r.passed for r in live.results]


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_blank_run_fails_both_groups(task: Task) -> None:
    g = graded(task, blank=True)
    assert (g.verdict, g.g2_passed) == ("I", False)
    assert g.g1_passed is False or not any(not isinstance(p, AnswerFieldSpec) for p in task.predicates)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_wrong_card_value_fails_on_g2_only(task: Task) -> None:
    field = next(p for p in task.predicates if isinstance(p, AnswerFieldSpec))
    wrong: Any = (
        ["wrong-item"]
        if isinstance(field.expected, list)
        else ("wrong-value" if isinstance(field.expected, str) else field.expected + 1000)
    )
    g = graded(task, card={**task.expected_card, field.field: wrong})
    assert (g.verdict, g.g1_passed, g.g2_passed) == ("I", True, False)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_skipping_the_key_response_fails_on_g1(task: Task) -> None:
    flow = next(p for p in task.predicates if isinstance(p, DataFlowSpec))
    g = graded(task, skip_url=flow.from_response_url_pattern)
    assert g.verdict == "I" and g.g1_passed is False


def test_live_abstention_is_read_from_the_messages() -> None:
    task = TASKS[0]
    session = WorldSession(BANK.worlds[task.world], 7, state_overrides=task.world_state)
    workspace = Workspace(list(task.seed), session.spec_content(), id_seed=7)
    result = Toolbox(workspace, session.send).call("report_blocked", {"reason": "no write scope"})
    messages = [
        {
            "role": "assistant",
            "content": [],
            "tool_calls": [{"id": "c1", "name": "report_blocked", "arguments": {"reason": "no write scope"}}],
        },
        {"role": "tool", "content": result.content, "tool_call_id": "c1", "function": "report_blocked"},
        {"role": "assistant", "content": [{"type": "text", "text": ""}]},
    ]
    g = grade(task.predicates, [], [], evidence_from_workspace(workspace, messages))
    assert (g.verdict, g.abstained, g.partial_score) == ("I", "report_blocked", 0.0)
    assert g.failure_reason == "agent abstained (report_blocked): 'no write scope'"


def test_strict_counts_only_bodies_the_agent_saw_whole() -> None:
    """The bins page's ``total`` lies beyond the 600-character preview: unseen until read."""
    task = BANK.task("sample-w01-sub02")
    session = WorldSession(BANK.worlds[task.world], 7, state_overrides=task.world_state)
    workspace = Workspace(list(task.seed), session.spec_content(), id_seed=7)
    toolbox = Toolbox(workspace, session.send)
    request = {
        "method": "GET",
        "url": "/v3/blocks/blk-7e21-0410/bins?offset=0&limit=25",
        "headers": {"Authorization": "Bearer tk_loam_5521"},
    }
    messages: list[dict[str, Any]] = []

    def call(name: str, arguments: dict[str, Any]) -> str:
        result = toolbox.call(name, arguments)
        ident = f"c{len(messages)}"
        messages.append(
            {
                "role": "assistant",
                "content": [],
                "tool_calls": [{"id": ident, "name": name, "arguments": arguments}],
            }
        )
        messages.append({"role": "tool", "content": result.content, "tool_call_id": ident, "function": name})
        return result.content

    sent = json.loads(call("execute", {"request": request}))
    assert sent["body_preview"].endswith("…") and '"total"' not in sent["body_preview"]
    total = DataFlowSpec(from_response_url_pattern="v3/blocks/.*/bins", from_body_key="total")

    def outcome(rules: str) -> bool | None:
        return (
            grade([total], [], [], evidence_from_workspace(workspace, messages), rules=rules)
            .results[0]
            .passed
        )

    assert (outcome("published-1.0"), outcome("strict-1.0")) == (True, False)
    request_id, response_id = (part.split(":")[1] for part in sent["response_ref"].split("/"))
    call(
        "read",
        {
            "entity_ref": {
                "kind": "response",
                "id": response_id,
                "parent": {"kind": "request", "id": request_id},
            }
        },
    )
    assert (outcome("published-1.0"), outcome("strict-1.0")) == (True, True)
