"""The single provider retry layer (apiflow/models/retry.py), with a fake clock and fake faults."""

import asyncio
import random

import pytest

from apiflow.models.retry import RetryPolicy, is_retryable, retry_after_s, retry_hook


class FakeResponse:
    def __init__(self, status, headers=None):
        self.status_code = status
        self.headers = headers or {}


class ProviderFault(Exception):
    def __init__(self, status, headers=None):
        super().__init__(f"status {status}")
        self.status_code = status
        self.response = FakeResponse(status, headers)


class BadRequestError(Exception):
    status_code = 400


class Gate:
    def __init__(self):
        self.before, self.limited, self.after = 0, [], 0

    async def before_attempt(self):
        self.before += 1
        return 0.0

    async def rate_limited(self, retry_after, kind=None):
        self.limited.append(retry_after)

    async def after_attempt(self, response):
        self.after += 1


def run(coro):
    return asyncio.run(coro)


def _flaky(faults, result="ok"):
    calls = []

    async def attempt():
        calls.append(1)
        if len(calls) <= len(faults):
            raise faults[len(calls) - 1]
        return result

    return attempt, calls


def test_retries_429_and_5xx_honouring_retry_after_and_logs_each_retry():
    sleeps = []

    async def sleep(s):
        sleeps.append(s)

    gate = Gate()
    hook = retry_hook(RetryPolicy(base_s=0.01, max_wait_s=0.01), gate, sleep=sleep, rng=random.Random(1))
    attempt, calls = _flaky(
        [ProviderFault(429, {"retry-after": "3"}), ProviderFault(503), ProviderFault(529)]
    )
    log = []
    assert run(hook(attempt, log)) == "ok"
    assert len(calls) == 4 and len(log) == 3
    assert [r["status"] for r in log] == [429, 503, 529]
    assert sleeps[0] == pytest.approx(3.0)  # Retry-After is a floor
    assert all(s <= 0.01 for s in sleeps[1:])  # otherwise full jitter within the window
    assert gate.before == 4 and gate.limited == [3.0] and gate.after == 1


def test_never_retries_a_bad_request():
    hook = retry_hook(RetryPolicy(), sleep=lambda s: asyncio.sleep(0))
    attempt, calls = _flaky([BadRequestError("context window")])
    log = []
    with pytest.raises(BadRequestError):
        run(hook(attempt, log))
    assert len(calls) == 1 and log == []


def test_gives_up_after_max_attempts_and_reraises_the_last_fault():
    async def sleep(s):
        pass

    hook = retry_hook(RetryPolicy(max_attempts=3, base_s=0.001), sleep=sleep)
    attempt, calls = _flaky([ProviderFault(500)] * 10)
    log = []
    with pytest.raises(ProviderFault):
        run(hook(attempt, log))
    assert len(calls) == 3 and len(log) == 2


def test_classification_and_retry_after_forms():
    assert is_retryable(ProviderFault(429)) and is_retryable(ProviderFault(502))
    assert not is_retryable(ProviderFault(401)) and not is_retryable(BadRequestError())
    assert is_retryable(TimeoutError()) and is_retryable(ConnectionError())
    assert retry_after_s(ProviderFault(429, {"retry-after-ms": "1500"})) == 1.5
    assert (
        retry_after_s(ProviderFault(429, {"retry-after": "Wed, 02 Dec 2026 10:00:10 GMT"}), now=1796205600.0)
        == 10.0
    )
    assert retry_after_s(ProviderFault(429)) is None


def test_retry_after_from_a_plain_header_copy_in_any_case():
    """litellm's ``litellm_response_headers`` can be a plain dict holding the sender's header case."""

    class Copied(Exception):
        litellm_response_headers = {"Retry-After": "3"}

    assert retry_after_s(Copied()) == 3.0
