"""The gate's adaptive rate (cluster.ratelimit.Aimd) with a fake clock: cut on 429s, grow back, stay capped."""

from __future__ import annotations

import asyncio
import random

import pytest

from cluster.ratelimit import ActorCallGate, RateGate, TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _send(gate: RateGate, clock: Clock, seconds: float, tokens: float = 0.0) -> int:
    """A greedy sender for ``seconds``: every request as soon as the gate lets it; how many went."""
    sent, end = 0, clock.now + seconds
    while clock.now < end:
        wait = gate.delay(tokens)
        if wait > 0:
            clock.now += max(wait, 1e-6)
            continue
        gate.take(tokens)
        sent += 1
    return sent


def test_it_starts_at_the_configured_limit_and_a_fixed_gate_never_moves() -> None:
    clock = Clock()
    fixed = RateGate(rpm=600, clock=clock, adaptive=False)
    fixed.pause(1.0)
    assert fixed.stats["rpm"] == 600 and fixed.stats["cuts"] == 0 and fixed.epoch == 0
    adaptive = RateGate(rpm=600, clock=clock)
    assert adaptive.stats["rpm"] == 600 and adaptive.requests.rate_per_s == 10.0


def test_a_burst_of_429s_from_requests_in_flight_cuts_once() -> None:
    clock = Clock()
    gate = RateGate(rpm=600, clock=clock)
    sent_at = gate.epoch  # ten requests let through at the same rate ...
    for _ in range(10):  # ... and all of them answered 429
        gate.pause(1.0, epoch=sent_at)
    assert gate.stats["cuts"] == 1 and gate.stats["stale_429s"] == 9 and gate.stats["rate_limited"] == 10
    assert gate.stats["rpm"] == pytest.approx(420) and gate.requests.rate_per_s == pytest.approx(7.0)
    gate.pause(1.0, epoch=gate.epoch)  # a request sent at the new rate that still gets a 429: news
    assert gate.stats["cuts"] == 2 and gate.stats["rpm"] == pytest.approx(294)


def test_cuts_go_down_to_the_floor_and_record_the_rate_over_time() -> None:
    clock = Clock()
    gate = RateGate(rpm=1024, clock=clock)
    for _ in range(25):
        clock.now += 1.0
        gate.pause(0.0, epoch=gate.epoch)
    assert gate.stats["rpm"] == 1.0  # a limit 1,000x lower than configured is a typo, not a tier
    series = gate.snapshot()["rpm_series"]
    assert series[0] == [0.0, 1024] and series[1] == [1.0, 716.8] and series[-1][1] == 1.0


def test_the_rate_grows_back_additively_per_window_of_throttled_success_and_never_past_the_limit() -> None:
    clock = Clock()
    gate = RateGate(rpm=600, clock=clock, aimd={"beta": 0.5, "window_s": 5.0, "step_share": 0.1})
    gate.pause(0.0, epoch=gate.epoch)
    assert gate.stats["rpm"] == 300
    rates = []
    for _ in range(14):
        _send(gate, clock, 5.0)  # the gate binds all window long
        gate.delay(0)  # the next look closes the window
        rates.append(gate.stats["rpm"])
    steps = [round(b - a, 6) for a, b in zip([300.0, *rates], rates, strict=False)]
    assert steps[:9] == [30.0] * 9  # 10 % of the rate the cut left, per window: additive, not compound
    assert max(rates) == 600 and rates[-1] == 600  # capped at the configured limit
    assert gate.stats["increases"] == 10 and gate.stats["cuts"] == 1


def test_an_unused_or_paused_rate_does_not_grow() -> None:
    clock = Clock()
    gate = RateGate(rpm=600, clock=clock, aimd={"beta": 0.5, "window_s": 5.0})
    gate.pause(0.0, epoch=gate.epoch)
    for _ in range(10):  # one request a second: far under the rate, the gate never made anyone wait
        clock.now += 1.0
        assert gate.delay(0) == 0
        gate.take(0)
    assert gate.stats["increases"] == 0 and gate.stats["rpm"] == 300
    gate.pause(30.0, epoch=gate.epoch)  # a long Retry-After: waiting it out proves nothing about the rate
    _send(gate, clock, 30.0)
    assert gate.stats["increases"] == 0 and gate.stats["rpm"] == 150


def test_a_429_that_names_tokens_cuts_the_token_rate_only_and_one_that_names_nothing_cuts_both() -> None:
    clock = Clock()
    gate = RateGate(rpm=600, tpm=60_000, clock=clock)
    gate.pause(1.0, epoch=gate.epoch, kind="tokens")
    assert (gate.stats["rpm"], gate.stats["tpm"]) == pytest.approx((600, 42_000)) and gate.tokens is not None
    assert gate.tokens.rate_per_s == pytest.approx(700.0)
    gate.pause(1.0, epoch=gate.epoch, kind="requests")
    assert (gate.stats["rpm"], gate.stats["tpm"]) == pytest.approx((420, 42_000))
    gate.pause(1.0, epoch=gate.epoch)
    assert (gate.stats["rpm"], gate.stats["tpm"]) == pytest.approx((294, 29_400))


def test_a_new_rate_keeps_what_accrued_at_the_old_one() -> None:
    bucket = TokenBucket(rate_per_s=10.0, capacity=10.0, level=0.0, stamp=0.0)
    bucket.set_rate(60.0, burst_s=1.0, now=0.5)  # 5 tokens accrued at 10/s; the new capacity is 1
    assert bucket.rate_per_s == 1.0 and bucket.capacity == 1.0 and bucket.level == 1.0


def _against_provider(
    real_rpm: float, adaptive: bool, minutes: float = 4.0, seed: int = 0
) -> dict[str, float]:
    """A greedy sender behind the gate (configured 20x too high) against a provider's own bucket;
    each 429 reaches the gate 20 ms after its request went, with the epoch it went in."""
    rng = random.Random(seed)
    clock = Clock()
    start = clock.now
    gate = RateGate(rpm=20 * real_rpm, clock=clock, adaptive=adaptive)
    provider = TokenBucket(real_rpm / 60.0, 1.0, stamp=clock.now)
    late: list[tuple[float, int, float]] = []  # (when the 429 arrives, epoch, retry-after)
    sent: list[tuple[float, bool]] = []
    while clock.now < start + minutes * 60:
        while late and late[0][0] <= clock.now:
            _, epoch, retry_after = late.pop(0)
            gate.pause(retry_after, epoch=epoch)
        wait = gate.delay(0)
        if wait > 0:
            clock.now += max(1e-6, min(wait, late[0][0] - clock.now if late else wait))
            continue
        gate.take(0)
        arrives = clock.now + rng.uniform(0.005, 0.05)
        refused = provider.wait_for(1.0, arrives)
        if refused:
            late = sorted([*late, (arrives + 0.02, gate.epoch, refused)])
        else:
            provider.level -= 1.0
        sent.append((clock.now, not refused))
        clock.now += 0.001
    later = [ok for t, ok in sent if t >= start + 60]
    return {
        "limited_after_1min": 1 - sum(later) / len(later),
        "rpm": gate.stats["rpm"],
        "cuts": gate.stats["cuts"],
    }


@pytest.mark.parametrize("real_rpm", [60, 600])
def test_with_the_limit_configured_20x_too_high_few_requests_get_429_after_the_first_minute(
    real_rpm: int,
) -> None:
    fixed = _against_provider(real_rpm, adaptive=False)
    learned = _against_provider(real_rpm, adaptive=True)
    assert fixed["limited_after_1min"] > 0.5  # the fixed gate keeps sending at 20x
    assert learned["limited_after_1min"] <= 0.05
    assert 0.3 * real_rpm <= learned["rpm"] <= 1.2 * real_rpm


class _Remote:
    def __init__(self, log: list[tuple[str, tuple[object, ...]]], name: str, result: object = None) -> None:
        self.log, self.name, self.result = log, name, result

    async def remote(self, *args: object) -> object:
        self.log.append((self.name, args))
        return self.result


def test_the_call_gate_hands_each_429_back_with_the_epoch_its_request_went_in() -> None:
    log: list[tuple[str, tuple[object, ...]]] = []

    class Gate:
        acquire = _Remote(log, "acquire", (0.25, 3))
        rate_limited = _Remote(log, "rate_limited")

    call_gate = ActorCallGate(Gate())

    async def attempt() -> float:
        waited = await call_gate.before_attempt()
        await call_gate.rate_limited(2.0)
        return waited

    assert asyncio.run(attempt()) == 0.25 and call_gate.waited_s == 0.25
    assert log == [("acquire", (2_000.0,)), ("rate_limited", (2.0, 3, None))]


def test_the_summary_and_the_progress_line_show_the_learned_rate() -> None:
    from cluster.progress import Tally
    from cluster.report import _learned

    gate = RateGate(rpm=600, clock=Clock())
    gate.pause(1.0, epoch=gate.epoch)
    assert _learned(gate.snapshot()) == ", rate 420 of 600 rpm (1 cuts, 0 increases)"
    assert _learned(RateGate(rpm=600, adaptive=False).snapshot()) == ""
    assert "· openai 420 rpm" in Tally(gate_rpm={"openai": 420.0}).describe()
