"""Provider rate limits shared by the whole cluster: one gate actor per provider key.

Each gate holds two token buckets (requests per minute, tokens per minute). Every provider
attempt of every trial on every node asks its provider's gate first; when a 429 arrives the
whole bucket pauses until ``Retry-After`` — one trial's 429 slows everyone, which is what keeps
the cluster under the provider's limit instead of each actor discovering it separately.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from apiflow.models.provider_fields import usage_from_response


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


class RateGate:
    """RPM + TPM buckets of one provider key, with a pause on 429 (pure logic; the actor wraps it).

    Args:
        rpm: Requests per minute.
        tpm: Tokens per minute (None: requests only).
        burst_s: Seconds of traffic a full bucket holds (small = smooth, never bursty).
        clock: Monotonic clock (tests pass a fake one).
    """

    def __init__(
        self, rpm: float, tpm: float | None = None, burst_s: float = 1.0, clock: Any = time.monotonic
    ):
        self.clock = clock
        now = clock()
        self.requests = TokenBucket(rpm / 60.0, max(1.0, rpm / 60.0 * burst_s), stamp=now)
        self.tokens = TokenBucket(tpm / 60.0, max(1.0, tpm / 60.0 * burst_s), stamp=now) if tpm else None
        self.paused_until = 0.0
        self.stats = {"acquired": 0, "waited_s": 0.0, "rate_limited": 0, "paused_s": 0.0}

    def delay(self, tokens: float) -> float:
        """Seconds the next request of ``tokens`` must wait (0: go now)."""
        now = self.clock()
        wait = max(0.0, self.paused_until - now, self.requests.wait_for(1.0, now))
        if self.tokens is not None:
            wait = max(wait, self.tokens.wait_for(tokens, now))
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

    def pause(self, retry_after_s: float | None, default_s: float = 1.0) -> None:
        """A 429: nobody sends until ``Retry-After`` has passed; the request bucket is emptied."""
        until = self.clock() + (retry_after_s if retry_after_s is not None else default_s)
        if until > self.paused_until:
            self.stats["paused_s"] += until - max(self.paused_until, self.clock())
            self.paused_until = until
        self.requests.level = min(self.requests.level, 0.0)
        self.stats["rate_limited"] += 1


class ActorCallGate:
    """The ``CallGate`` one trial hands the retry layer: its provider's gate actor plus a token estimate.

    The estimate of the next request's tokens is the last request's counted tokens (a trial's
    prompts only grow), starting from ``first_estimate``. A request is counted as the provider's
    token limit counts it: cache reads only where the limit includes them (``counts_cache_reads``;
    ``apiflow.models.caching.limit_counts_cache_reads``).
    """

    def __init__(self, gate: Any, first_estimate: float = 2_000.0, *, counts_cache_reads: bool = True) -> None:
        self.gate = gate
        self.estimate = first_estimate
        self.waited_s = 0.0
        self.counts_cache_reads = counts_cache_reads

    async def before_attempt(self) -> float:
        waited = await self.gate.acquire.remote(self.estimate)
        self.waited_s += waited
        return waited

    async def rate_limited(self, retry_after_s: float | None) -> None:
        await self.gate.rate_limited.remote(retry_after_s)

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
