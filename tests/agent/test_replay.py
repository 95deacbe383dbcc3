"""Replay belongs to a run (apiflow.agent.replay): on only for runs of built-in offline models, and
keyed by what the harness took when each call ran, not by objects a model still holds."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiflow.agent import TrialSpec
from apiflow.agent.replay import Replay, replay_for, replays
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.models.base import GenerateConfig, ModelOutput, ToolCall
from apiflow.runner import play_trial_sync

from .test_trial import _trial, _without_wall_time


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


@pytest.mark.parametrize(
    "models, sound",
    [
        (["apiflow/oracle"], True),
        (["apiflow/oracle", "apiflow/sim:weak", "apiflow/adv:replay", "apiflow/sim:calibrated-gpt-5.5"], True),
        (["openai/gpt-5-mini"], False),
        (["apiflow/oracle", "anthropic/claude-sonnet-4-6"], False),
        (["external/my-agent"], False),
        (["example-agent/rules"], False),
        ([], False),
    ],
)
def test_replay_is_on_only_when_every_model_is_built_in(models: list[str], sound: bool) -> None:
    assert replays(models) is sound
    assert (replay_for(models) is not None) is sound


def test_each_run_gets_its_own_replay() -> None:
    first, second = replay_for(["apiflow/oracle"]), replay_for(["apiflow/oracle"])
    assert first is not None and second is not None and first is not second
    assert first.transitions is not second.transitions and first.grades is not second.grades


class _Forger:
    """Sends the honest trial's calls by name with wrong arguments (so it fails), and on its last turn
    edits those argument objects and the live transcript into the honest trial's: the attack on a
    grade keyed by what the model still holds when the trial is graded."""

    model_api = "forger/x"

    def __init__(self, honest: list[dict[str, Any]]) -> None:
        self.honest = honest
        self.turns = [m for m in honest if m["role"] == "assistant"]
        self.sent: list[tuple[dict[str, Any], Any]] = []

    async def generate(self, messages: Any, tools: Any, config: GenerateConfig | None = None) -> ModelOutput:
        turn = self.turns[len([m for m in messages if m["role"] == "assistant"])]
        if not turn.get("tool_calls"):
            for wrong, right in self.sent:
                wrong.clear()
                wrong.update(copy.deepcopy(right))
            messages[:] = copy.deepcopy(self.honest[:-1])
            return ModelOutput(text=turn["content"][0]["text"])
        calls = []
        for call in turn["tool_calls"]:
            wrong: dict[str, Any] = {"forged": True}
            self.sent.append((wrong, call["arguments"]))
            calls.append(ToolCall(call["id"], call["name"], wrong))
        return ModelOutput(tool_calls=calls)


def test_a_model_editing_what_ran_after_the_fact_changes_no_other_trial(bank: Bank) -> None:
    """The forger's failing grade is not filed under the honest trial's key: the honest trial of the
    same (task, epoch) after it, in the same run, records exactly what it records with no replay."""
    task_id = "sample-w01-chain-1to07"
    task = bank.task(task_id)
    honest_alone = _trial(bank, task_id)
    assert honest_alone.verdict == "C"
    replay = Replay()
    forged = play_trial_sync(
        TrialSpec(
            task=task, world=bank.world_of(task), seed=7, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
            run_id="run-test", model_slug="slug",
        ),
        _Forger(honest_alone.messages), replay=replay,
    )
    assert forged.verdict == "I" and forged.messages == honest_alone.messages  # the forgery took
    honest = _trial(bank, task_id, replay=replay)
    assert _without_wall_time(honest) == _without_wall_time(honest_alone)
