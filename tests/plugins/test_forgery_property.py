"""Property: nothing a model does to the objects it was handed or returned, after a call, changes its
own record or the grade of another trial of the same (task, epoch) in the same run (issue 26, 1-2).

The model plays the oracle's script. At every call it mutates, in an order hypothesis draws, the
conversation it was handed, the turns it returned before (their tool-call argument dicts) and what
they were served with. It runs as agent code (a ``PluginModel``), in a run whose world-and-grade
replay is ON, followed by an honest oracle trial of the same (task, epoch) in that run.

Its edits to its own view may change what it does next (that is its business, and its record shows
it), so the check is not "equal to the oracle's record" but: its record is exactly what a fresh
world answers to the turns it recorded (replayed by a plain scripted model, no replay memo), and the
honest trial after it is graded exactly as one played alone.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apiflow.agent.replay import Replay
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models.base import ModelOutput, ToolCall
from apiflow.models.offline import oracle_model
from apiflow.models.plugins import PluginModel
from apiflow.runner import Run, TrialPlan

TASK = "sample-w01-chain-1to03"
BANK = load_bank(DEFAULT_BANK)

_TEXT = st.sampled_from(["", "FORGED", "C", "x" * 50, "{}", "../../etc"])
_OP = st.tuples(
    st.sampled_from(["messages", "arguments", "output"]),
    st.sampled_from(["clear", "set", "append", "pop", "nest"]),
    _TEXT,
)


def _mutate(target: Any, action: str, value: str) -> None:
    """One in-place edit of a list or dict (anything else is left alone)."""
    if isinstance(target, list):
        if action == "clear":
            target.clear()
        elif action == "append":
            target.append({"role": "user", "content": value})
        elif action == "pop" and target:
            target.pop()
        elif target and isinstance(target[-1], dict):
            _mutate(target[-1], action, value)
    elif isinstance(target, dict):
        if action == "clear":
            target.clear()
        elif action in ("set", "append"):
            for key in list(target)[:3] or ["forged"]:
                target[key] = value
        elif action == "pop" and target:
            target.pop(next(iter(target)))
        elif action == "nest":
            for item in target.values():
                if isinstance(item, (list, dict)):
                    _mutate(item, "set", value)


class Mutator:
    """The oracle's turns, with the edits of ``ops`` applied after each call."""

    def __init__(self, task: Any, ops: list[tuple[str, str, str]]) -> None:
        self.inner = oracle_model(task)
        self.model_api = "mutator/x"
        self.ops = ops
        self.held: list[Any] = []  # what it returned earlier: it keeps the references

    async def generate(self, messages: list[dict[str, Any]], tools: Any, config: Any) -> Any:
        # Its own objects: the built-in oracle hands out its script's (shared by every oracle of the
        # task in this process), which a model that edits what it returned would otherwise reach.
        output = copy.deepcopy(await self.inner.generate(messages, tools, config))
        for where, action, value in self.ops:
            if where == "messages":
                _mutate(messages, action, value)
            for earlier in self.held:
                if where == "arguments":
                    for call in earlier.tool_calls:
                        _mutate(call.arguments, action, value)
                elif where == "output" and isinstance(earlier.served, list):
                    _mutate(earlier.served, action, value)
        self.held.append(output)
        return output


class Replayer:
    """Sends exactly the assistant turns of a record, in order (trusted, built-in shaped)."""

    def __init__(self, record: Any) -> None:
        self.model_api = "mutator/x"
        self.turns = [m for m in record.messages if m["role"] == "assistant"]

    async def generate(self, messages: Any, tools: Any, config: Any) -> ModelOutput:
        turn = self.turns.pop(0)
        text = "".join(b.get("text", "") for b in turn["content"] if b.get("type") == "text")
        calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in turn.get("tool_calls", []))
        return ModelOutput(text=text, tool_calls=calls)


def _graded(record: Any) -> tuple[Any, ...]:
    return (record.verdict, record.failure_reason, record.verifier, record.messages)


def _play(run: Run, plans: list[TrialPlan], ops: list[tuple[str, str, str]], replayed: Any = None) -> list[Any]:
    def build(plan: TrialPlan) -> Any:
        if plan.model == "mutator/x":
            if replayed is not None:
                return Replayer(replayed)
            return PluginModel(Mutator(plan.task, ops), "mutator/x", "test")
        return oracle_model(plan.task)

    async def records() -> list[Any]:
        return [r async for r in run.play(plans, build)]

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(records())
    finally:
        loop.close()


HONEST = None


def _honest() -> Any:
    global HONEST  # noqa: PLW0603 - a test module's memo of one reference record
    if HONEST is None:
        (HONEST,) = _play(Run(BANK, "r", 0), [TrialPlan("apiflow/oracle", BANK.task(TASK), 1)], [])
    return HONEST


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_OP, min_size=1, max_size=6))
def test_nothing_a_model_does_after_a_call_changes_its_record_or_anothers_grade(ops) -> None:
    task = BANK.task(TASK)
    run = Run(BANK, "r", 0, replay=Replay())  # shared world answers and grades, as in a grid
    mutated, after = _play(run, [TrialPlan("mutator/x", task, 1), TrialPlan("apiflow/oracle", task, 1)], ops)
    (fresh,) = _play(Run(BANK, "r", 0), [TrialPlan("mutator/x", task, 1)], [], replayed=mutated)
    assert _graded(mutated) == _graded(fresh)  # the record is what the harness sent and received
    assert _graded(after) == _graded(_honest())  # and the next trial's grade is its own
