"""The bridge and server in one process, played through the SDK's own ``mcp.Client``.

Each case plays a scripted model over MCP and in process and compares the records: parallel
turns, malformed arguments, an abstention, a limit, an agent that leaves without finishing,
and the protocol mistakes the server refuses.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcpkit import SLUG, comparable, in_process

from apiflow.agent.loop import TrialLimits
from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.bank.task import GoldenCall, Task
from apiflow.mcp import AgentBridge
from apiflow.mcp.agent import play
from apiflow.mcp.bridge import TRIAL_OVER
from apiflow.mcp.serve import first_trial
from apiflow.mcp.server import build_server
from apiflow.models.offline import PlannedCall, ScriptedModel, Turn, oracle_model
from apiflow.results.record import TrialRecord

TASK = "sample-w01-sub01"


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


def _script(*turns: Turn) -> ScriptedModel:
    return ScriptedModel("apiflow/scripted", list(turns))


def _calls(*calls: tuple[str, dict[str, Any]]) -> Turn:
    return Turn(tuple(PlannedCall(GoldenCall(name=name, arguments=args)) for name, args in calls))


async def _over_mcp(
    bank: Bank, task: Task, agent: Any, limits: TrialLimits | None = None
) -> tuple[TrialRecord, Any]:
    """Run the trial with an AgentBridge while ``agent(client)`` plays it; (record, agent's result)."""
    bridge = AgentBridge("external/mcp", initial_messages(task))
    trial = asyncio.create_task(first_trial(bank, task, bridge, slug=SLUG, limits=limits))
    async with Client(build_server(bridge)) as client:
        played = await agent(client)
        if not trial.done():  # an agent that left: its session is over
            bridge.session_closed()
        return await asyncio.wait_for(trial, 60), played


def _same_over_mcp(bank: Bank, model: ScriptedModel, again: ScriptedModel, **kwargs: Any) -> TrialRecord:
    """Play ``model`` over MCP and ``again`` (the same script) in process; the records must agree."""
    task = bank.task(TASK)
    limits = kwargs.get("limits")
    record, transcript = asyncio.run(_over_mcp(bank, task, lambda c: play(c, model), limits))
    assert comparable(record) == comparable(in_process(bank, task, again, **kwargs))
    assert transcript == record.messages[: len(transcript)]
    return record


def test_parallel_calls_are_one_turn_run_in_order(bank: Bank) -> None:
    turns = (
        _calls(
            ("search", {"query": ""}), ("read", {"entity_ref": "spec:openapi"}), ("search", {"query": "id"})
        ),
        Turn(text="done"),
    )
    record = _same_over_mcp(bank, _script(*turns), _script(*turns))
    assert record.apiflow.model_calls == 2 and record.apiflow.tool_calls == 3
    assert [c["name"] for c in record.messages[2]["tool_calls"]] == ["search", "read", "search"]


def test_bad_arguments_come_back_as_in_process(bank: Bank) -> None:
    turns = (
        _calls(("read", {"bogus": 1})),
        _calls(("execute", {"request": 5, "target": "x"})),
        _calls(("nosuchtool", {})),
        Turn(text="gave up"),
    )
    record = _same_over_mcp(bank, _script(*turns), _script(*turns))
    errors = [m.get("error", {}).get("type") for m in record.messages if m["role"] == "tool"]
    assert len(errors) == 3 and "parsing" in errors and record.apiflow.tool_errors == 3


def test_abstention_gets_its_result_and_ends_the_trial(bank: Bank) -> None:
    turns = (_calls(("report_blocked", {"reason": "no access"})),)
    record = _same_over_mcp(bank, _script(*turns), _script(*turns))
    assert record.apiflow.termination == "report_blocked"
    assert record.messages[3]["content"].startswith("trial terminated (report_blocked)")


def test_a_limit_ends_the_trial_and_refuses_later_calls(bank: Bank) -> None:
    turns = tuple(_calls(("search", {"query": str(i)})) for i in range(5))
    limits = TrialLimits(max_tool_calls=2)
    record = _same_over_mcp(bank, _script(*turns), _script(*turns), limits=limits)
    assert record.apiflow.termination == "limit" and record.apiflow.limit == "tool_calls"


def test_an_agent_that_leaves_is_an_empty_turn(bank: Bank) -> None:
    task = bank.task(TASK)

    async def leave(client: Any) -> None:
        await client.call_tool("search", {"query": ""})

    record, _ = asyncio.run(_over_mcp(bank, task, leave))
    assert record.apiflow.termination == "no_answer" and record.passed is False
    assert record.messages[-1] == {"role": "assistant", "content": []}
    assert record.tokens.total == 0  # it declared no usage


def test_protocol_mistakes_are_refused_and_late_calls_told_the_trial_is_over(bank: Bank) -> None:
    task = bank.task(TASK)

    async def agent(client: Any) -> list[Any]:
        refused = []
        for meta in ({"apiflow/turn": {"id": "t", "size": 0}}, {"apiflow/usage": {"input": -1}}):
            with pytest.raises(MCPError) as err:
                await client.call_tool("search", {"query": ""}, meta=meta)
            refused.append(err.value.message)
        await client.call_tool("search", {"query": ""}, meta={"apiflow/call_id": "c1"})
        with pytest.raises(MCPError, match="already used"):
            await client.call_tool("search", {"query": ""}, meta={"apiflow/call_id": "c1"})
        bad_finish = await client.call_tool("finish", {"text": "x"})
        await client.call_tool("finish", {"answer": "done"})
        await asyncio.sleep(0.2)
        late = await client.call_tool("search", {"query": ""})
        return [*refused, bad_finish, late]

    record, (size, usage, bad_finish, late) = asyncio.run(_over_mcp(bank, task, agent))
    assert "size must be" in size and "non-negative" in usage
    assert bad_finish.is_error and "answer" in bad_finish.content[0].text
    assert late.is_error and late.content[0].text == TRIAL_OVER
    assert record.apiflow.termination == "answered" and record.apiflow.tool_calls == 1


def test_every_sample_task_golden_over_mcp_is_the_in_process_record(bank: Bank) -> None:
    for task in bank.tasks.values():
        record, _ = asyncio.run(_over_mcp(bank, task, lambda c, t=task: play(c, oracle_model(t))))
        assert record.verdict == "C", task.id
        assert comparable(record) == comparable(in_process(bank, task, oracle_model(task))), task.id


def test_a_budgeted_model_passes_the_end_of_the_trial_on() -> None:
    from cluster.budget import BudgetedModel

    ended: list[int] = []

    class Inner:
        model_api = "external/x"

        async def end_trial(self, messages: list[dict[str, Any]]) -> None:
            ended.append(len(messages))

    wrapped = BudgetedModel(Inner(), ledger=None, prices=None, key="t")  # type: ignore[arg-type]
    asyncio.run(wrapped.end_trial([{}, {}]))
    assert ended == [2]
