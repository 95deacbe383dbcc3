"""The ReAct loop's stop conditions, limits and accounting, against a fake toolbox."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from apiflow.agent.loop import TrialLimits, run_loop
from apiflow.agent.prompts import initial_messages
from apiflow.bank.task import GoldenCall
from apiflow.models.base import (
    ContextWindowExceeded,
    GenerateConfig,
    ModelOutput,
    ProviderError,
    ToolCall,
    Usage,
)
from apiflow.models.offline import PlannedCall, ScriptedModel, Turn, card_text, oracle_model
from apiflow.results.record import Termination

from .fakes import FakeToolbox, tiny_task


def _run(model: Any, limits: TrialLimits | None = None, toolbox: FakeToolbox | None = None):
    task = tiny_task()
    messages = initial_messages(task)
    box = toolbox or FakeToolbox()
    outcome = asyncio.run(run_loop(model, box, [], messages, limits=limits))
    return outcome, messages, box


def _turn(*calls: tuple[str, dict[str, Any]], malformed: bool = False) -> Turn:
    return Turn(tuple(PlannedCall(GoldenCall(name=n, arguments=a), malformed=malformed) for n, a in calls))


def test_oracle_answers_and_resolves_refs() -> None:
    outcome, messages, box = _run(oracle_model(tiny_task()))
    assert outcome.termination is Termination.ANSWERED
    assert outcome.model_calls == 5 and outcome.tool_calls == 4 and outcome.tool_errors == 0
    # The last golden call reads the first execute's response by its minted ref.
    assert box.calls[-1] == ("read", {"entity_ref": "request:req-000001/response:resp-00000001"})
    final = messages[-1]
    assert final["role"] == "assistant" and "tool_calls" not in final
    assert '"plan_id": "plan-1a2b-0001"' in final["content"][0]["text"]


def test_empty_reply_is_no_answer() -> None:
    outcome, messages, _ = _run(ScriptedModel("x", [Turn()]))
    assert outcome.termination is Termination.NO_ANSWER
    assert messages[-1] == {"role": "assistant", "content": []}
    assert outcome.tool_calls == 0 and outcome.model_calls == 1


@pytest.mark.parametrize("tool", ["clarify", "report_blocked"])
def test_abstention_ends_with_one_empty_assistant_turn(tool: str) -> None:
    key = "question" if tool == "clarify" else "reason"
    script = [_turn((tool, {key: "no way"}), ("execute", {"request": {}})), Turn(text="never asked")]
    model = ScriptedModel("x", script)
    outcome, messages, box = _run(model)
    assert outcome.termination == tool
    assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "assistant"]
    assert messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": ""}]}
    assert outcome.model_calls == 1 and len(box.calls) == 1  # nothing after the abstention runs


def test_malformed_arguments_go_back_as_tool_errors_and_are_counted() -> None:
    script = [_turn(("execute", {"request": {"url": "/a"}}), malformed=True), Turn(text="done")]
    outcome, messages, _ = _run(ScriptedModel("x", script))
    tool_msg = messages[-2]
    assert tool_msg["content"] == "" and tool_msg["error"]["type"] == "parsing"
    assert isinstance(messages[-3]["tool_calls"][0]["arguments"], str)
    assert outcome.parse_errors == 1 and outcome.tool_errors == 1
    assert outcome.termination is Termination.ANSWERED


def test_parallel_calls_run_in_order() -> None:
    calls = [("search", {"query": str(i)}) for i in range(4)]
    outcome, messages, box = _run(ScriptedModel("x", [_turn(*calls), Turn(text="ok")]))
    assert [a["query"] for _, a in box.calls] == ["0", "1", "2", "3"]
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == [f"call-000-{i}" for i in range(4)]


def _looping_model(turns: int = 100) -> ScriptedModel:
    return ScriptedModel("x", [_turn(("search", {"query": "x"}), ("search", {"query": "y"}))] * turns)


def test_message_limit() -> None:
    outcome, messages, _ = _run(_looping_model(), TrialLimits(max_messages=10))
    assert outcome.termination is Termination.LIMIT and outcome.limit == "messages"
    assert len(messages) == 10


def test_tool_call_limit() -> None:
    outcome, messages, _ = _run(_looping_model(), TrialLimits(max_tool_calls=5))
    assert (outcome.termination, outcome.limit, outcome.tool_calls) == (Termination.LIMIT, "tool_calls", 5)
    assert messages[-1]["role"] == "tool"  # cut off with a call pending, as published


def test_token_limit() -> None:
    outcome, _, _ = _run(_looping_model(), TrialLimits(max_tokens=3000))
    assert outcome.limit == "tokens"
    u = outcome.usage
    assert u.input + u.output + u.cache_read >= 3000


class _SlowModel:
    model_api = "slow"

    async def generate(self, messages: list, tools: list, config: GenerateConfig) -> ModelOutput:
        await asyncio.sleep(5)
        return ModelOutput(text="late")


def test_wall_time_limit_cuts_a_hanging_model_call() -> None:
    outcome, _, _ = _run(_SlowModel(), TrialLimits(max_seconds=0.05))
    assert (outcome.termination, outcome.limit, outcome.model_calls) == (Termination.LIMIT, "time", 0)


class _SlowToolbox(FakeToolbox):
    def call(self, name: str, arguments: dict[str, Any] | str, scanned: Any = None) -> Any:
        time.sleep(0.1)  # past the trial's clock
        return super().call(name, arguments, scanned)


class _CountingModel:
    """One tool call, then an answer; never suspends, so no timer could cut it mid-call."""

    model_api = "counting"

    def __init__(self) -> None:
        self.asked = 0

    async def generate(self, messages: list, tools: list, config: GenerateConfig) -> ModelOutput:
        self.asked += 1
        if self.asked == 1:
            return ModelOutput(tool_calls=(ToolCall("c1", "search", {"query": "x"}),))
        return ModelOutput(text="done")


def test_a_clock_spent_by_the_tools_ends_the_trial_before_the_model_is_asked_again() -> None:
    model = _CountingModel()
    outcome, _, _ = _run(model, TrialLimits(max_seconds=0.05), _SlowToolbox())
    assert (outcome.termination, outcome.limit) == (Termination.LIMIT, "time")
    assert outcome.model_calls == model.asked == 1
    assert outcome.agent_error is None  # the harness's own clients: nothing of the agent's to name


class _FailingModel:
    model_api = "failing"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def generate(self, messages: list, tools: list, config: GenerateConfig) -> ModelOutput:
        raise self.exc


def test_provider_error_is_a_harness_outcome() -> None:
    exc = ProviderError("RateLimitError: slow down", retries=({"attempt": 1},))
    outcome, _, _ = _run(_FailingModel(exc))
    assert outcome.termination is Termination.PROVIDER_ERROR
    assert outcome.retries == [{"attempt": 1}] and "RateLimitError" in (outcome.harness_error or "")


def test_context_window_overflow_is_the_models_limit_not_a_harness_outcome() -> None:
    exc = ContextWindowExceeded("ContextWindowExceededError: 8212 > 8192", retries=({"attempt": 1},))
    outcome, _, _ = _run(_FailingModel(exc))
    assert (outcome.termination, outcome.limit) == (Termination.LIMIT, "context_window")
    assert outcome.retries == [{"attempt": 1}] and outcome.harness_error is None


def test_model_client_bug_is_a_harness_error() -> None:
    outcome, _, _ = _run(_FailingModel(KeyError("oops")))
    assert outcome.termination is Termination.HARNESS_ERROR
    assert outcome.harness_error == "KeyError: 'oops'"


def test_tool_bug_is_a_harness_error() -> None:
    outcome, _, _ = _run(ScriptedModel("x", [_turn(("boom", {}))]))
    assert outcome.termination is Termination.HARNESS_ERROR and "tool bug" in (outcome.harness_error or "")


class _UsageModel:
    model_api = "usage"

    def __init__(self) -> None:
        self.n = 0

    async def generate(self, messages: list, tools: list, config: GenerateConfig) -> ModelOutput:
        self.n += 1
        calls = (ToolCall("c1", "search", {"query": ""}),) if self.n == 1 else ()
        return ModelOutput(
            text="" if calls else card_text({"a": 1}),
            reasoning="thinking" if calls else None,
            tool_calls=calls,
            usage=Usage(10, 5, 100, 7, 2),
            provider_cost_usd=0.5,
            retries=({"attempt": 1, "status": 429},) if self.n == 1 else (),
        )


def test_usage_cost_retries_and_reasoning_blocks_are_accumulated() -> None:
    outcome, messages, _ = _run(_UsageModel())
    assert outcome.usage == Usage(20, 10, 200, 14, 4)
    assert outcome.provider_cost_usd == 1.0 and outcome.retries == [{"attempt": 1, "status": 429}]
    assert messages[2]["content"] == [{"type": "reasoning", "reasoning": "thinking"}]


def test_a_timeout_raised_by_the_client_is_a_harness_error_not_a_limit() -> None:
    outcome, _, _ = _run(_FailingModel(TimeoutError("socket")), TrialLimits(max_seconds=60))
    assert outcome.termination is Termination.HARNESS_ERROR and outcome.limit is None
    assert outcome.harness_error == "TimeoutError: socket"


def test_no_limits_at_all() -> None:
    limits = TrialLimits(max_messages=None, max_tool_calls=None, max_tokens=None, max_seconds=None)
    outcome, messages, _ = _run(oracle_model(tiny_task()), limits)
    assert outcome.termination is Termination.ANSWERED and len(messages) == 2 + 5 + 4
