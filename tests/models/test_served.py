"""Each provider call records what the provider said served it: model id, fingerprint, request id."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from apiflow.agent import TrialSpec
from apiflow.agent.intake import InputLog, TurnIntake
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import make_model
from apiflow.models.base import ModelOutput
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm
from apiflow.runner import play_trial_sync
from apiflow.testing.standin_server import StandinConfig, StandinServer

TASK = "sample-w01-sub01"


@pytest.fixture
def standin() -> Iterator[StandinServer]:
    configure_litellm()
    server = StandinServer(StandinConfig(plays=(("gpt-5-mini", "apiflow/oracle"),)))
    server.start()
    yield server
    server.stop()


def _spec(bank, task) -> TrialSpec:
    return TrialSpec(task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                     bank_hash=bank.hash, run_id="r", model_slug="m")  # fmt: skip


def test_a_provider_trial_records_what_served_each_call(standin: StandinServer) -> None:
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(TASK)
    client = LiteLLMClient("openai/gpt-5-mini", {"api_base": standin.url, "api_key": "sk-standin"})
    record = play_trial_sync(_spec(bank, task), client)
    served = record.apiflow.served
    assert record.passed and len(served) == record.apiflow.model_calls > 1
    assert all(s[:3] == ["gpt-5-mini", "fp_standin", "chatcmpl-standin"] for s in served)  # then the tier, if named


def test_an_offline_trial_records_nothing_served() -> None:
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(TASK)
    record = play_trial_sync(_spec(bank, task), make_model("apiflow/oracle", task, 0))
    assert "served" not in json.loads(record.to_json())["apiflow"]  # offline records keep their bytes


def test_a_malformed_served_claim_is_dropped_and_counted() -> None:
    log = InputLog()
    intake = TurnIntake(log)
    turn = intake.check(ModelOutput(text="done", served=("m", 7, "id")), 10_000)  # type: ignore[arg-type]
    assert turn.output.served is None and log.repairs.get("served") == 1


def test_openai_routes_send_one_prompt_cache_key_per_task(standin: StandinServer) -> None:
    bank = load_bank(DEFAULT_BANK)
    params = {"api_base": standin.url, "api_key": "sk-standin"}
    for task_id in (TASK, TASK, "sample-w01-sub02"):
        task = bank.task(task_id)
        play_trial_sync(_spec(bank, task), LiteLLMClient("openai/gpt-5-mini", params))
    keys = standin.provider.stats.cache_keys
    first, second = keys[: len(keys) // 3], keys[len(keys) // 3 :]
    assert all(k.startswith("apiflow-") for k in keys)
    assert len(set(keys)) == 2  # the two trials of one task share a key, the other task has its own
    assert first and set(first) < set(keys) and second
    before = len(keys)
    task = bank.task(TASK)
    play_trial_sync(_spec(bank, task), LiteLLMClient("openai/gpt-5-mini", {**params, "prompt_caching": False}))
    assert set(standin.provider.stats.cache_keys[before:]) == {""}  # caching off: no hint either
