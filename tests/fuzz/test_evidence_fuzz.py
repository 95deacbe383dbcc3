"""What a trial's grade may be looked up by (apiflow.agent.grades): the workspace after a trial, all
the grader reads of it, is a function of the trial's setup and the calls its toolbox ran.

Random call sequences (the sample task's golden calls, as the bank wrote them and in this trial's
canary forms, mixed with schema-shaped fuzzed calls, JSON text and odd values) are played on fresh
trial setups of the same seeds: alone, and again after another sequence sharing a prefix filled the
transition memo. The evidence (exchanges with their bodies, variables, entities, counts) is the same
value with the same types each time, ``Toolbox.calls`` lists exactly what was called, and no tool
changes the arguments it is handed.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from apiflow.agent import trial as agent_trial
from apiflow.agent.canaries import canary_literals, trial_salting
from apiflow.agent.ids import derived_seed
from apiflow.agent.replay import Replay
from apiflow.grading import evidence_from_workspace
from apiflow.world import WorldSession

from .strategies import TOOL_NAMES, encoded, fuzz_settings, json_values, odd_text, sample_bank, schema_shaped

TASK = "sample-w01-chain-1to07"


def _golden() -> list[tuple[str, Any]]:
    """The task's golden calls, as written and in the canary forms of the trial the fuzz plays."""
    bank = sample_bank()
    task = bank.task(TASK)
    world = bank.world_of(task)
    spec = WorldSession(world, derived_seed("world", 0, task.id, 1), state_overrides=task.world_state)
    literals = canary_literals(task, spec.spec_content())
    codec, _ = trial_salting(task, literals, derived_seed("canary", 0, task.id, 1))
    calls = [(call.name, call.arguments) for step in task.golden for call in step.calls]
    return copy.deepcopy(calls + [(name, codec.salt_value(args)) for name, args in calls])


_FUZZED = st.sampled_from(TOOL_NAMES).flatmap(
    lambda name: st.tuples(
        st.just(name), schema_shaped(name) | encoded(schema_shaped(name)) | json_values | odd_text
    )
)
_STEP = st.one_of(st.integers(0, 10_000), _FUZZED)  # an int picks a golden call


def _calls(steps: list[Any], golden: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [copy.deepcopy(golden[s % len(golden)]) if isinstance(s, int) else s for s in steps]


def _play(calls: list[tuple[str, Any]], replay: Replay) -> tuple[str, list[tuple[str, Any]], list[str]]:
    bank = sample_bank()
    task = bank.task(TASK)
    trial = agent_trial._Trial(task, bank.world_of(task), 0, 1, replay)
    toolbox = trial.setup()
    contents = []
    for name, arguments in calls:
        before = repr(arguments)
        contents.append(toolbox.call(name, arguments).content)
        assert repr(arguments) == before, f"{name} changed its arguments"
    assert trial.workspace is not None
    evidence = evidence_from_workspace(trial.workspace, [])
    return repr(evidence), toolbox.calls, contents


@fuzz_settings(60)
@given(st.lists(_STEP, min_size=1, max_size=10), st.lists(_STEP, max_size=6), st.integers(0, 10))
def test_evidence_is_a_function_of_setup_and_calls(steps: list[Any], other: list[Any], shared: int) -> None:
    golden = _golden()
    calls = _calls(steps, golden)
    replay = Replay()
    alone = _play(copy.deepcopy(calls), replay)
    assert alone[1] == calls  # the toolbox's log is what it was handed, in order
    _play(copy.deepcopy(calls[:shared]) + _calls(other, golden), replay)  # fills the memo along a shared prefix
    again = _play(copy.deepcopy(calls), replay)
    assert again[0] == alone[0] and again[2] == alone[2]
