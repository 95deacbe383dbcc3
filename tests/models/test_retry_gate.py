"""Every 429 reaches the rate gate once, with its limit kind: the retried ones and the one that ends the call.

The AIMD gate cuts its rate on the 429s it hears of (docs/design/043); the 429 of a call's last
attempt used to end in ``ProviderError`` without reaching it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apiflow.agent import TrialSpec
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models.base import GenerateConfig
from apiflow.models.faults import LiteLLMProviderError
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm
from apiflow.models.retry import RetryPolicy, retry_hook
from apiflow.results.record import Termination
from apiflow.runner import play_trial_sync
from apiflow.testing.standin_server import StandinConfig, StandinServer


class Gate:
    """A ``CallGate`` that keeps what it was told."""

    def __init__(self) -> None:
        self.before = 0
        self.limited: list[tuple[float | None, str | None]] = []

    async def before_attempt(self) -> float:
        self.before += 1
        return 0.0

    async def rate_limited(self, retry_after_s: float | None, kind: str | None = None) -> None:
        self.limited.append((retry_after_s, kind))

    async def after_attempt(self, response: Any) -> None:
        pass


class Response:
    def __init__(self, status: int, headers: dict[str, str]) -> None:
        self.status_code, self.headers = status, headers


class Fault(Exception):
    def __init__(self, status: int, message: str, retry_after: str = "2") -> None:
        super().__init__(message)
        self.status_code = status
        self.response = Response(status, {"retry-after": retry_after})


async def _no_sleep(seconds: float) -> None:
    pass


def _run(faults: list[Exception], policy: RetryPolicy, gate: Gate) -> tuple[list[dict[str, Any]], Any]:
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(1)
        if len(calls) <= len(faults):
            raise faults[len(calls) - 1]
        return "ok"

    log: list[dict[str, Any]] = []
    hook = retry_hook(policy, gate, sleep=_no_sleep)
    try:
        return log, asyncio.run(hook(attempt, log))
    except Exception as exc:  # noqa: BLE001 - the caller checks which
        return log, exc


def test_the_429_that_exhausts_the_attempts_reaches_the_gate_too() -> None:
    gate = Gate()
    faults: list[Exception] = [Fault(429, "Rate limit reached for tokens")] * 5
    log, result = _run(faults, RetryPolicy(max_attempts=3, base_s=0.001), gate)
    assert isinstance(result, Fault) and len(log) == 2 and gate.before == 3
    assert gate.limited == [(2.0, "tokens")] * 3  # each attempt's 429 once, the last one included


def test_the_429_after_the_time_cap_reaches_the_gate_too() -> None:
    gate = Gate()
    faults: list[Exception] = [Fault(429, "requests per minute", retry_after="5")] * 5
    log, result = _run(faults, RetryPolicy(max_attempts=10, max_elapsed_s=0.0), gate)
    assert isinstance(result, Fault) and log == []  # no time left for a retry
    assert gate.limited == [(5.0, "requests")]


def test_each_429_once_and_no_other_fault() -> None:
    gate = Gate()
    faults: list[Exception] = [Fault(429, "Too Many Requests"), Fault(503, "overloaded"), Fault(429, "x")]
    log, result = _run(faults, RetryPolicy(base_s=0.001), gate)
    assert result == "ok" and [r["status"] for r in log] == [429, 503, 429]
    assert gate.limited == [(2.0, None), (2.0, None)]  # a 429 that names no limit: kind None


def test_an_account_out_of_quota_is_not_a_rate_limit() -> None:
    gate = Gate()
    log, result = _run(
        [Fault(429, "You exceeded your current quota (insufficient_quota)")], RetryPolicy(), gate
    )
    assert isinstance(result, Fault) and log == [] and gate.limited == []


@pytest.fixture
def always_limited() -> Any:
    configure_litellm()
    server = StandinServer(
        StandinConfig(p_429=1.0, retry_after_s=0.0, plays=(("gpt-5-mini", "apiflow/oracle"),))
    )
    server.start()
    yield server
    server.stop()


def test_through_litellm_every_429_of_a_failed_call_reaches_the_gate(always_limited: StandinServer) -> None:
    gate = Gate()
    params = {"api_base": always_limited.url, "api_key": "sk-local"}
    client = LiteLLMClient(
        "openai/gpt-5-mini", params, retry_hook(RetryPolicy(max_attempts=3), gate, sleep=_no_sleep)
    )
    with pytest.raises(LiteLLMProviderError) as failed:
        asyncio.run(client.generate([{"role": "user", "content": "hi"}], [], GenerateConfig()))
    assert failed.value.status_code == 429 and len(failed.value.retries) == 2
    assert always_limited.provider.stats.rate_limited == 3
    assert [kind for _, kind in gate.limited] == ["requests"] * 3  # the stand-in names the limit


def test_a_trial_whose_provider_stays_limited_ends_provider_error(always_limited: StandinServer) -> None:
    gate = Gate()
    bank = load_bank(DEFAULT_BANK)
    task = bank.task("sample-w01-sub01")
    spec = TrialSpec(task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                     bank_hash=bank.hash, run_id="r", model_slug="m")  # fmt: skip
    hook = retry_hook(RetryPolicy(max_attempts=2), gate, sleep=_no_sleep)
    params = {"api_base": always_limited.url, "api_key": "sk-local"}
    record = play_trial_sync(spec, LiteLLMClient("openai/gpt-5-mini", params, hook))
    assert record.apiflow.termination == Termination.PROVIDER_ERROR
    assert len(gate.limited) == 2 == always_limited.provider.stats.rate_limited
