"""Whole trials on the sample bank: the oracle passes everything, records are deterministic."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apiflow.agent import TrialLimits, TrialSpec, trial_seed
from apiflow.agent.replay import Replay
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.models import OFFLINE_MODELS, make_model
from apiflow.models.adversarial import ADVERSARY_MODELS
from apiflow.models.base import GenerateConfig, ModelOutput
from apiflow.results.record import WALL_TIME_FIELDS, Termination, TrialRecord
from apiflow.runner import play_trial_sync
from apiflow.tools import tool_schema_hash


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


def _trial(
    bank: Bank,
    task_id: str,
    model_name: str = "apiflow/oracle",
    epoch: int = 1,
    seed: int = 7,
    model: Any = None,
    limits: TrialLimits | None = None,
    replay: Replay | None = None,
) -> TrialRecord:
    task = bank.task(task_id)
    model = model or make_model(model_name, task, trial_seed(seed, task_id, epoch))
    return play_trial_sync(
        TrialSpec(
            task=task,
            world=bank.world_of(task),
            seed=seed,
            epoch=epoch,
            bank_name=bank.name,
            bank_hash=bank.hash,
            run_id="run-test",
            model_slug="slug",
            limits=limits,
        ),
        model,
        replay=replay,
    )


def _without_wall_time(record: TrialRecord) -> dict[str, Any]:
    data = json.loads(record.to_json())
    for dotted in WALL_TIME_FIELDS:
        *parents, leaf = dotted.split(".")
        holder = data
        for key in parents:
            holder = holder[key]
        holder.pop(leaf)
    return data


def test_oracle_completes_every_sample_task(bank: Bank) -> None:
    for task_id in bank.tasks:
        record = _trial(bank, task_id)
        assert record.apiflow.termination is Termination.ANSWERED, task_id
        assert (record.verdict, record.passed) == ("C", True), (task_id, record.failure_reason)
        assert record.apiflow.tool_errors == 0 and record.apiflow.harness_error is None


def test_blank_makes_no_tool_calls(bank: Bank) -> None:
    record = _trial(bank, "sample-w01-sub01", "apiflow/blank")
    assert record.apiflow.termination is Termination.NO_ANSWER and record.apiflow.tool_calls == 0
    assert record.verdict == "I" and record.passed is False
    assert [m["role"] for m in record.messages] == ["system", "user", "assistant"]


@pytest.mark.parametrize("model_name", ["apiflow/oracle", "apiflow/sim:weak"])
def test_same_inputs_give_identical_records(bank: Bank, model_name: str) -> None:
    first = _trial(bank, "sample-w01-chain-1to04", model_name)
    second = _trial(bank, "sample-w01-chain-1to04", model_name)
    assert _without_wall_time(first) == _without_wall_time(second)
    other_epoch = _trial(bank, "sample-w01-chain-1to04", model_name, epoch=2)
    assert other_epoch.apiflow.trial_id != first.apiflow.trial_id


def test_record_layout(bank: Bank) -> None:
    record = _trial(bank, "sample-w01-sub02")
    data = json.loads(record.to_json())
    assert list(data)[:6] == ["schema_version", "model", "model_api", "task_id", "trial", "verdict"]
    tokens = data["tokens"]
    assert tokens["total"] == tokens["input"] + tokens["output"] + tokens["cache"] > 0
    detail = data["apiflow"]["tokens"]
    assert detail["cache_read"] == tokens["cache"] and detail["input"] == tokens["input"]
    assert (
        len(data["apiflow"]["trial_id"]) == 64 and data["apiflow"]["tool_schema_hash"] == tool_schema_hash()
    )
    assert data["provenance"]["run_id"] == "run-test" and data["verifier"] is not None
    tool_msgs = [m for m in data["messages"] if m["role"] == "tool"]
    assert all(set(m) >= {"content", "tool_call_id", "function"} for m in tool_msgs)


class _Broken:
    model_api = "test/broken"

    async def generate(self, messages: list, tools: list, config: GenerateConfig) -> ModelOutput:
        raise ZeroDivisionError("bug in a client")


def test_harness_error_is_unscored_not_a_model_failure(bank: Bank) -> None:
    record = _trial(bank, "sample-w01-sub01", model=_Broken())
    assert record.apiflow.termination is Termination.HARNESS_ERROR and record.is_harness_outcome
    assert (record.verdict, record.passed, record.verifier) == ("", None, None)
    assert record.apiflow.harness_error == "ZeroDivisionError: bug in a client"


def test_setup_fault_is_a_harness_error(bank: Bank) -> None:
    task = bank.task("sample-w01-sub01")
    bad = task.model_copy(update={"seed": [object()]})  # not a seed variable: the workspace cannot take it
    record = play_trial_sync(
        TrialSpec(
            task=bad,
            world=bank.world_of(task),
            seed=0,
            epoch=1,
            bank_name="b",
            bank_hash="h",
            run_id="r",
            model_slug="s",
        ),
        make_model("apiflow/oracle", task, 0),
    )
    assert record.apiflow.termination is Termination.HARNESS_ERROR and record.verdict == ""


def test_limit_is_recorded_and_graded(bank: Bank) -> None:
    record = _trial(bank, "sample-w01-chain-1to07", limits=TrialLimits(max_tool_calls=3))
    assert (record.apiflow.termination, record.apiflow.limit, record.apiflow.tool_calls) == (
        "limit",
        "tool_calls",
        3,
    )
    assert record.verdict == "I"


def test_sim_profiles_rank_on_the_sample_bank(bank: Bank) -> None:
    def pass_rate(profile: str) -> float:
        records = [
            _trial(bank, task_id, f"apiflow/sim:{profile}", epoch=e)
            for task_id in bank.tasks
            for e in (1, 2, 3)
        ]
        assert all(not r.is_harness_outcome for r in records)
        return sum(bool(r.passed) for r in records) / len(records)

    ace, weak = pass_rate("ace"), pass_rate("weak")
    assert ace >= 0.7 and weak <= 0.4 and ace - weak >= 0.4


def test_replayed_world_answers_change_no_record(bank: Bank) -> None:
    """Every offline model and adversary on every sample task: each trial answered partly from the
    transition memo (the models before it played the same worlds, down the same paths and off
    them) records exactly what it records with the memo empty."""
    plays = [(t, m) for t in sorted(bank.tasks) for m in (*OFFLINE_MODELS, *ADVERSARY_MODELS)]
    alone = [_without_wall_time(_trial(bank, task_id, model_name)) for task_id, model_name in plays]
    replay = Replay()
    shared = [_without_wall_time(_trial(bank, t, m, replay=replay)) for t, m in plays]
    memo = replay.transitions
    assert memo.hits > memo.misses  # the memo did answer most requests
    assert shared == alone
