"""Provider rate limits shared by the whole cluster: one gate actor per provider key.

Each gate holds two token buckets (requests per minute, tokens per minute). Every provider
attempt of every trial on every node asks its provider's gate first; when a 429 arrives the
whole bucket pauses until ``Retry-After`` — one trial's 429 slows everyone, which is what keeps
the cluster under the provider's limit instead of each actor discovering it separately.

The buckets' rates adapt (``Aimd``): the configured limit is a ceiling, not a promise — an account's
real tier may be lower, or shared with other work — so a 429 cuts the rate and windows of
throttled success add it back, as TCP finds a link's capacity (docs/design/043).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from apiflow.models.provider_fields import usage_from_response

LimitKind = Literal["requests", "tokens"]


@dataclass
class TokenBucket:
    """A refilling bucket: ``rate_per_s`` tokens per second, at most ``capacity`` stored."""

    rate_per_s: float
    capacity: float
    level: float = field(default=-1.0)
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        if self.level < 0:
            self.level = self.capacity

    def refill(self, now: float) -> None:
        """Add what accrued since the last look."""
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate_per_s)
        self.stamp = now

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` tokens are available (0 when they are)."""
        self.refill(now)
        need = min(amount, self.capacity) - self.level
        return 0.0 if need <= 0 else need / self.rate_per_s

    def set_rate(self, per_minute: float, burst_s: float, now: float) -> None:
        """Change the rate; what accrued so far accrued at the old one."""
        self.refill(now)
        self.rate_per_s = per_minute / 60.0
        self.capacity = max(1.0, self.rate_per_s * burst_s)
        self.level = min(self.level, self.capacity)


@dataclass
class Aimd:
    """The effective per-minute rate of one limit: additive increase, multiplicative decrease.

    It starts at the ceiling (the configured limit, which is usually right: starting lower would
    cost every correctly configured run a slow climb, while cuts find a limit 20x too high in nine).
    A cut multiplies by ``beta`` (0.7, CUBIC's: the rate averages ~85 % of where 429s begin, where
    halving averages 75 %); each ``window_s`` in which the limit made a request wait, and no cut
    came, adds ``step_share`` of the rate the last cut left — so climbing back to where the cut came
    from takes ``(1 / beta - 1) / step_share`` windows (14 here), whatever the scale.
    Never above the ceiling, never below ``ceiling * floor_share``.
    """

    ceiling: float
    since: float
    beta: float = 0.7
    window_s: float = 5.0
    step_share: float = 0.03
    floor_share: float = 2.0**-10
    rate: float = field(init=False)
    step: float = field(init=False)
    busy: bool = field(default=False, init=False)
    """The limit made a request wait in this window (growing an unused rate would prove nothing)."""

    def __post_init__(self) -> None:
        self.rate = self.ceiling
        self.step = self.ceiling * self.step_share

    def cut(self, now: float) -> None:
        self.rate = max(self.ceiling * self.floor_share, self.rate * self.beta)
        self.step = self.rate * self.step_share
        self.since, self.busy = now, False

    def grow(self, now: float) -> bool:
        """Close the window if it is over; True when the rate grew."""
        if now - self.since < self.window_s:
            return False
        grew = self.busy and self.rate < self.ceiling
        if grew:
            self.rate = min(self.ceiling, self.rate + self.step)
        self.since, self.busy = now, False
        return grew


class RateGate:
    """RPM + TPM buckets of one provider key, with a pause on 429 (pure logic; the actor wraps it).

    Args:
        rpm: Requests per minute (the ceiling of the adaptive rate).
        tpm: Tokens per minute (None: requests only).
        burst_s: Seconds of traffic a full bucket holds (small = smooth, never bursty).
        clock: Monotonic clock (tests pass a fake one).
        adaptive: Learn the rate from 429s (``Aimd``); False keeps the configured rates fixed.
        aimd: ``Aimd`` parameters (``beta``, ``window_s``, ``step_share``, ``floor_share``).
    """

    SERIES = 512
    """Effective-rate changes kept for the stats (the latest)."""

    def __init__(
        self, rpm: float, tpm: float | None = None, burst_s: float = 1.0, clock: Any = time.monotonic,
        *, adaptive: bool = True, aimd: dict[str, float] | None = None,
    ):  # fmt: skip
        self.clock = clock
        now = clock()
        self.began = now
        self.burst_s = burst_s
        self.requests = TokenBucket(rpm / 60.0, max(1.0, rpm / 60.0 * burst_s), stamp=now)
        self.tokens = TokenBucket(tpm / 60.0, max(1.0, tpm / 60.0 * burst_s), stamp=now) if tpm else None
        self.paused_until = 0.0
        self.adaptive = adaptive
        self.limits: dict[LimitKind, Aimd] = {"requests": Aimd(rpm, now, **(aimd or {}))}
        if tpm:
            self.limits["tokens"] = Aimd(tpm, now, **(aimd or {}))
        self.epoch = 0
        """Cuts so far: a 429 of a request sent before the last cut is news the cut already acted on."""
        self.series: deque[tuple[float, float]] = deque([(0.0, rpm)], maxlen=self.SERIES)
        self.stats: dict[str, Any] = {
            "acquired": 0, "waited_s": 0.0, "rate_limited": 0, "paused_s": 0.0, "adaptive": adaptive,
            "rpm": rpm, "rpm_limit": rpm, "cuts": 0, "increases": 0, "stale_429s": 0,
            **({"tpm": tpm, "tpm_limit": tpm} if tpm else {}),
        }  # fmt: skip

    def _bucket(self, kind: LimitKind) -> TokenBucket:
        bucket = self.requests if kind == "requests" else self.tokens
        assert bucket is not None
        return bucket

    def _changed(self, now: float) -> None:
        for kind, limit in self.limits.items():
            self._bucket(kind).set_rate(limit.rate, self.burst_s, now)
            self.stats["rpm" if kind == "requests" else "tpm"] = limit.rate
        self.series.append((now - self.began, self.limits["requests"].rate))

    def delay(self, tokens: float) -> float:
        """Seconds the next request of ``tokens`` must wait (0: go now)."""
        now = self.clock()
        paused = self.paused_until > now
        if self.adaptive and not paused:
            grew = [limit.grow(now) for limit in self.limits.values()]
            if any(grew):
                self.stats["increases"] += 1
                self._changed(now)
        by_rate = self.requests.wait_for(1.0, now)
        self.limits["requests"].busy |= by_rate > 0 and not paused
        wait = max(0.0, self.paused_until - now, by_rate)
        if self.tokens is not None:
            by_tokens = self.tokens.wait_for(tokens, now)
            self.limits["tokens"].busy |= by_tokens > 0 and not paused
            wait = max(wait, by_tokens)
        return wait

    def take(self, tokens: float) -> None:
        """Spend one request and ``tokens`` tokens (after ``delay`` returned 0)."""
        self.requests.level -= 1.0
        if self.tokens is not None:
            self.tokens.level -= min(tokens, self.tokens.capacity)
        self.stats["acquired"] += 1

    def correct(self, estimated: float, actual: float) -> None:
        """Charge (or refund) the difference between a request's estimated and actual tokens."""
        if self.tokens is not None:
            self.tokens.level = min(self.tokens.capacity, self.tokens.level - (actual - estimated))

    def pause(
        self, retry_after_s: float | None, default_s: float = 1.0, *, epoch: int | None = None,
        kind: LimitKind | None = None,
    ) -> None:  # fmt: skip
        """A 429: nobody sends until ``Retry-After`` has passed; the request bucket is emptied.

        With ``adaptive``, the limit ``kind`` names (both when the 429 does not say) is cut — once for
        all the 429s of requests sent at the same rate: ``epoch`` is the gate's epoch when the
        request was let through (None: now), and a request let through before the last cut
        reports on a rate that is gone.
        """
        now = self.clock()
        until = now + (retry_after_s if retry_after_s is not None else default_s)
        if until > self.paused_until:
            self.stats["paused_s"] += until - max(self.paused_until, now)
            self.paused_until = until
        self.stats["rate_limited"] += 1
        if self.adaptive and epoch is not None and epoch != self.epoch:
            self.stats["stale_429s"] += 1
        elif self.adaptive:
            for name, limit in self.limits.items():
                if kind is None or kind == name:
                    limit.cut(now)
            self.epoch += 1
            self.stats["cuts"] += 1
            self._changed(now)
        self.requests.refill(now)
        self.requests.level = min(self.requests.level, 0.0)

    def snapshot(self) -> dict[str, Any]:
        """The stats with the effective request rate over time: ``[seconds since began, rpm]``
        pairs, ``began`` on the gate's clock (the host's monotonic clock, in the actor)."""
        series = [[round(t, 2), round(r, 2)] for t, r in self.series]
        return {**self.stats, "began": self.began, "rpm_series": series}


class ActorCallGate:
    """The ``CallGate`` one trial hands the retry layer: its provider's gate actor plus a token estimate.

    The estimate of the next request's tokens is the last request's counted tokens (a trial's
    prompts only grow), starting from ``first_estimate``. A request is counted as the provider's
    token limit counts it: cache reads only where the limit includes them (``counts_cache_reads``;
    ``apiflow.models.caching.limit_counts_cache_reads``). The gate's epoch at each attempt goes back
    with its 429, so the gate can tell a 429 of the current rate from one of a rate already cut.
    """

    def __init__(self, gate: Any, first_estimate: float = 2_000.0, *, counts_cache_reads: bool = True) -> None:
        self.gate = gate
        self.estimate = first_estimate
        self.waited_s = 0.0
        self.counts_cache_reads = counts_cache_reads
        self.epoch: int | None = None

    async def before_attempt(self) -> float:
        waited, self.epoch = await self.gate.acquire.remote(self.estimate)
        self.waited_s += waited
        return float(waited)

    async def rate_limited(self, retry_after_s: float | None, kind: str | None = None) -> None:
        named = kind if kind in ("requests", "tokens") else None  # any other word: not said
        await self.gate.rate_limited.remote(retry_after_s, self.epoch, named)

    async def after_attempt(self, response: Any) -> None:
        raw = getattr(response, "usage", None)
        if raw is None:
            return
        usage = usage_from_response(raw)
        counted = usage.input + usage.cache_write + usage.output + usage.reasoning
        if self.counts_cache_reads:
            counted += usage.cache_read
        if counted > 0:
            await self.gate.correct.remote(self.estimate, float(counted))
            self.estimate = float(counted)
