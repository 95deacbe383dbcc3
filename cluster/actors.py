"""The Ray actors of a grid: what the driver starts, and the only cluster module besides the driver
and its session that imports Ray.

Each actor is a thin shell around a class that knows nothing of Ray (``Ledger``, ``RateGate``,
``TrialRunner``), so planning, budget, rate limits and the trial runner are tested without a
cluster, and ``apiflow grid status`` runs in an install without Ray.
"""

from __future__ import annotations

import asyncio
import os
import resource
import threading
import time
import zlib
from typing import Any

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

from cluster.budget import Admission, Ledger
from cluster.plan import PlannedTrial
from cluster.ratelimit import LimitKind, RateGate
from cluster.spec import NAMES_CHECKED, GridSpec
from cluster.worker import GcPauses, TrialOutcome, TrialRunner, settle_heap, thread_cpu_s

ACTOR_LOST: tuple[type[BaseException], ...] = (RayActorError, ActorDiedError, ActorUnavailableError)
"""What a call to an actor raises when the actor died or cannot be reached (the dispatcher re-queues)."""


@ray.remote(max_restarts=0)
class BudgetLedger:
    """The cluster-wide ledger actor (one per run)."""

    def __init__(self, cap_usd: float, spent_usd: float = 0.0, guessed: frozenset[int] = frozenset()) -> None:
        self.ledger = Ledger(cap_usd, spent_usd, guessed)

    def admit(self, trials: list[Admission]) -> int:
        return self.ledger.admit(trials)

    def charge(self, key: str, actual_usd: float) -> None:
        self.ledger.charge(key, actual_usd)

    def finish(self, ended: list[tuple[str, bool]]) -> bool:
        """Trials that ended (id, stored); whether the ledger is still open."""
        for key, stored in ended:
            self.ledger.finish(key, stored)
        return self.ledger.is_open

    def summary(self) -> dict[str, Any]:
        return self.ledger.summary()


@ray.remote(max_restarts=-1, max_task_retries=0)
class ProviderGate:
    """The cluster-wide gate of one provider key (an async actor: waiting callers queue in order).

    ``adaptive``: the grid's ``ratelimits.<key>.adaptive`` (AIMD under the configured ceiling, or fixed rates).
    """

    def __init__(
        self,
        provider: str,
        rpm: float,
        tpm: float | None = None,
        burst_s: float = 1.0,
        adaptive: bool = True,
    ) -> None:
        self.provider = provider
        self.gate = RateGate(rpm, tpm, burst_s, adaptive=adaptive)
        self.lock = asyncio.Lock()

    async def acquire(self, tokens: float = 0.0) -> tuple[float, int]:
        """Wait for room for one request of ``tokens``; return the seconds waited and the gate's
        epoch (handed back with the request's 429, if it gets one)."""
        started = time.monotonic()
        async with self.lock:  # FIFO: the first to ask is the first served
            while (wait := self.gate.delay(tokens)) > 0:
                await asyncio.sleep(wait)
            self.gate.take(tokens)
            epoch = self.gate.epoch
        waited = time.monotonic() - started
        self.gate.stats["waited_s"] += waited
        return waited, epoch

    async def rate_limited(
        self, retry_after_s: float | None, epoch: int | None = None, kind: LimitKind | None = None
    ) -> None:
        """Report a 429 with its ``Retry-After``, the epoch its request was let through in, and
        which limit it names (None: not said)."""
        self.gate.pause(retry_after_s, epoch=epoch, kind=kind)

    async def correct(self, estimated: float, actual: float) -> None:
        """Settle a request's token estimate against its usage."""
        self.gate.correct(estimated, actual)

    async def stats(self) -> dict[str, Any]:
        """Counters for the progress display and the run summary (the effective rate among them)."""
        return {"provider": self.provider, **self.gate.snapshot()}


# enable_task_events=False: Ray otherwise records a state-change event per method call and ships
# them to the dashboard from a core-worker thread; with one call per batch that is small, but a
# provider grid makes ~1 call per trial held for minutes and the events then cost CPU that
# trials need (docs/design/043, "Concurrency: what the provider path sets, and why"). Failures still surface as outcomes.
@ray.remote(max_restarts=-1, max_task_retries=0, enable_task_events=False)  # type: ignore[call-overload]  # Ray's stubs lag its options
class TrialWorker:
    """Async actor: one ``TrialRunner``; many batches in flight at once (``max_concurrency``)."""

    def __init__(self, spec_json: str | bytes, run_id: str, gates: dict[str, Any], ledger: Any) -> None:
        # bytes: the driver compressed a large spec so that Ray still passes it inline
        # (``cluster.driver.inline_spec``); inline arguments survive actor restarts.
        began, cpu = time.monotonic(), time.process_time()
        text = zlib.decompress(spec_json).decode() if isinstance(spec_json, bytes) else spec_json
        spec = GridSpec.model_validate_json(text, context={NAMES_CHECKED: True})
        self.runner = TrialRunner(spec, run_id, gates, ledger)
        settle_heap(spec)
        self.gc = GcPauses()
        self.init_cpu_s, self.init_wall_s = time.process_time() - cpu, time.monotonic() - began
        self.cpu_at_init = time.process_time()

    async def run_batch(self, batch: list[PlannedTrial]) -> list[TrialOutcome]:
        return await self.runner.run_batch(batch)

    async def ping(self) -> int:
        return os.getpid()

    async def stats(self) -> dict[str, Any]:
        """This actor's costs so far (the benchmark's split of worker CPU per trial)."""
        cpu = self.runner.cpu
        return {
            "pid": os.getpid(),
            "init_cpu_s": self.init_cpu_s,
            "init_wall_s": self.init_wall_s,
            "cpu_since_init_s": time.process_time() - self.cpu_at_init,
            "trials": cpu.trials,
            "play_cpu_s": cpu.play_s,
            "store_cpu_s": cpu.store_s,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "gc_s": list(self.gc.seconds),
            "gc_count": list(self.gc.count),
            "gc_longest_s": self.gc.longest_s,
            "thread_cpu_s": thread_cpu_s(threading.get_native_id()),  # stats runs on the loop
            "batch_tier": self.runner.batching.stats(),  # batches, turns answered, re-read, missed
            **(self.runner.replay.stats() if self.runner.replay is not None else {}),
        }
