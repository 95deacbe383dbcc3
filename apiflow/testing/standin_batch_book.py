"""The stand-in's batch state: jobs of both batch APIs, their clock, their processing and their bill.

A batch's requests are done one after another across ``StandinConfig.batch_latency_s`` wall
seconds from its creation (request ``i`` of ``n`` at ``(i + 1) / n`` of the span), each answered by
``StandinProvider.answer`` (the synchronous endpoints' own code, billed on the ``batch`` tier). Work
is settled when someone looks (any batch request, ``GET /stats``): what is due by then is done, in
order, and a batch whose end, expiry or cancel has passed ends. Settling on observation instead of
on a timer keeps the stand-in a plain request/response server with nothing running between
requests, and which requests are done, expired or cancelled is the same whenever one looks: it
depends on the due times only. The due answers are computed at the look, on the server's event loop
(a big batch ending at once holds the loop while it is answered, as a big synchronous burst would).

The wire shapes live beside it: ``standin_batches_openai`` (Files + Batch API) and
``standin_batches_anthropic`` (Message Batches); ``standin_batches`` routes HTTP to them.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

Provider = Literal["openai", "anthropic"]
Kind = Literal["succeeded", "errored", "expired", "canceled"]
Ending = Literal["completed", "expired", "cancelled", "failed"]


class Answering(Protocol):
    """What the book needs of ``StandinProvider`` (typed here so the two modules do not import each other)."""

    config: Any
    stats: Any
    lock: threading.Lock

    def answer(
        self, body: dict[str, Any], wire: Any, tier: Any = "sync", auth: str = ""
    ) -> tuple[int, dict[str, str], dict[str, Any]]: ...


@dataclass
class Outcome:
    """One batch request's fate: its answer (the synchronous status and body) or why it has none."""

    kind: Kind
    status: int = 0
    """HTTP status of the answer (200 when succeeded; 0 when expired or cancelled)."""
    body: dict[str, Any] | None = None
    """The answer: what the synchronous endpoint returned (an error body when errored)."""
    request_id: str = ""
    message: str = ""
    """Why an errored request without a body failed (the wire writes its own error around it)."""


@dataclass
class BatchJob:
    """One batch, on either API."""

    id: str
    provider: Provider
    wire: str
    """The synchronous wire that answers its requests (``standin_config.Wire``)."""
    custom_ids: list[str]
    bodies: list[dict[str, Any]]
    created: float
    """``time.monotonic()`` (of the book's clock) at creation."""
    created_unix: float
    latency_s: float
    expire_s: float
    info: dict[str, Any] = field(default_factory=dict)
    """What the wire module keeps (OpenAI: input file, endpoint, metadata, output files)."""
    outcomes: list[Outcome] = field(default_factory=list)
    cancel_at: float | None = None
    ended_at: float | None = None
    ending: Ending | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    """Validation errors that failed the whole batch (OpenAI's ``errors.data``)."""
    on_end: Callable[[BatchJob], None] | None = None
    """Called once, under the book's lock, when the batch ends (OpenAI writes its files then)."""

    def due(self, index: int) -> float:
        """When request ``index`` is done."""
        return self.created + self.latency_s * (index + 1) / max(1, len(self.bodies))

    def count(self, kind: Kind) -> int:
        return sum(o.kind == kind for o in self.outcomes)


def iso(unix: float | None) -> str | None:
    """RFC 3339 in UTC, as Anthropic writes times."""
    if unix is None:
        return None
    return datetime.fromtimestamp(unix, UTC).isoformat().replace("+00:00", "Z")


def unit(*parts: object) -> float:
    """A number in [0, 1) that is a function of ``parts`` (seeded dice, independent of order)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class BatchBook:
    """Files and batches of both APIs, held in memory (the stand-in is a test server).

    One lock guards it; request answers take the provider's own lock inside it (never the other
    way round). ``clock`` is ``time.monotonic``; a test may replace it to place a cancel or an
    expiry exactly between two requests.
    """

    def __init__(self, provider: Answering) -> None:
        self.provider = provider
        self.lock = threading.RLock()
        self.clock: Callable[[], float] = time.monotonic
        self.jobs: dict[str, BatchJob] = {}
        self.files: dict[str, dict[str, Any]] = {}
        """OpenAI file objects by id, each with its bytes under ``"content"`` (not sent)."""
        self.attempts: dict[tuple[Provider, str], int] = {}
        """Times each ``custom_id`` was run in a batch (the failure dice's third input)."""
        self.paid: dict[tuple[Provider, str], int] = {}
        """Times each ``custom_id`` was answered 200 in a batch (billed)."""
        self.minted = 0

    def mint(self, prefix: str, size: int = 24) -> str:
        """A fresh id: deterministic per server seed and creation order, shaped as the API's."""
        with self.lock:
            self.minted += 1
            digest = hashlib.sha256(
                f"{self.provider.config.seed}|{prefix}|{self.minted}".encode()
            ).hexdigest()
        return prefix + digest[:size]

    def unix(self, job: BatchJob, at: float | None) -> float | None:
        """A monotonic instant of ``job`` (of the book's clock) as Unix seconds."""
        return None if at is None else job.created_unix + (at - job.created)

    def create(
        self, provider: Provider, wire: str, prefix: str, custom_ids: list[str], bodies: list[dict[str, Any]]
    ) -> BatchJob:
        c = self.provider.config
        job = BatchJob(id=self.mint(prefix), provider=provider, wire=wire, custom_ids=custom_ids,
                       bodies=bodies, created=self.clock(), created_unix=time.time(),
                       latency_s=c.batch_latency_s, expire_s=c.batch_expire_s)  # fmt: skip
        with self.lock:
            self.jobs[job.id] = job
        return job

    def find(self, provider: Provider, batch_id: str) -> BatchJob | None:
        """The batch, settled to now (None when the provider holds no such batch)."""
        with self.lock:
            job = self.jobs.get(batch_id)
            if job is None or job.provider != provider:
                return None
            self.settle(job)
            return job

    def fail(self, job: BatchJob, errors: list[dict[str, Any]]) -> None:
        """End ``job`` at its creation: its input failed validation (nothing runs, nothing is billed)."""
        with self.lock:
            job.errors, job.ending, job.ended_at = errors, "failed", job.created

    def cancel(self, job: BatchJob) -> None:
        """Stop ``job`` now: what is done stays done; it ends (cancelled) when next looked at."""
        with self.lock:
            self.settle(job)
            if job.ended_at is None and job.cancel_at is None:
                job.cancel_at = self.clock()

    def settle_all(self) -> None:
        with self.lock:
            for job in self.jobs.values():
                self.settle(job)

    def settle(self, job: BatchJob) -> None:
        """Do what is due by now, in order; end the batch when its end, expiry or cancel has passed."""
        with self.lock:
            if job.ended_at is not None:
                return
            now = self.clock()
            end, expire_at = job.created + job.latency_s, job.created + job.expire_s
            stop = min(expire_at, math.inf if job.cancel_at is None else job.cancel_at)
            horizon = min(now, stop, end)
            while len(job.outcomes) < len(job.bodies) and job.due(len(job.outcomes)) <= horizon:
                job.outcomes.append(self._run(job, len(job.outcomes)))
            if now >= end and end <= stop:  # every request is due by now
                while len(job.outcomes) < len(job.bodies):
                    job.outcomes.append(self._run(job, len(job.outcomes)))
                job.ending, job.ended_at = "completed", end
            elif now >= expire_at and expire_at == stop:
                self._close(job, "expired", expire_at)
            elif job.cancel_at is not None and now > job.cancel_at:  # "cancelling" until the clock moves on
                self._close(job, "cancelled", job.cancel_at)
            else:
                return
            if job.on_end is not None:
                job.on_end(job)

    @staticmethod
    def _close(job: BatchJob, ending: Ending, at: float) -> None:
        """End ``job`` early: the requests not done are expired or cancelled."""
        rest: Kind = "expired" if ending == "expired" else "canceled"
        job.outcomes.extend(Outcome(rest) for _ in range(len(job.outcomes), len(job.bodies)))
        job.ending, job.ended_at = ending, at

    def _run(self, job: BatchJob, index: int) -> Outcome:
        """Answer one request of ``job`` with the synchronous code, on the batch tier."""
        provider, custom_id = self.provider, job.custom_ids[index]
        key = (job.provider, custom_id)
        attempt = self.attempts.get(key, 0)
        self.attempts[key] = attempt + 1
        request_id = f"req_{hashlib.sha256(f'request|{job.id}|{custom_id}'.encode()).hexdigest()[:32]}"
        c = provider.config
        if c.p_batch_fail and unit(c.seed, job.provider, custom_id, attempt) < c.p_batch_fail:
            with provider.lock:
                provider.stats.batch.requests += 1
            return Outcome("errored", 500, None, request_id)  # the wire writes its server error
        try:
            status, _, body = provider.answer(job.bodies[index], job.wire, "batch")
        except Exception as exc:  # a body the stand-in cannot read: its own 500, as a server's bug would be
            return Outcome("errored", 500, None, request_id, repr(exc))
        if status != 200:
            return Outcome("errored", status, body, request_id)
        with provider.lock:
            self.paid[key] = self.paid.get(key, 0) + 1
            if self.paid[key] == 2:
                provider.stats.paid_twice += 1
        return Outcome("succeeded", 200, body, request_id)

    def page(
        self, provider: Provider, limit: int, after: str | None, before: str | None = None
    ) -> tuple[list[BatchJob], bool]:
        """A page of the provider's batches, newest first: ``(jobs, has_more)``. ``after`` pages to
        older batches than that id, ``before`` to newer ones (an unknown cursor: an empty page)."""
        with self.lock:
            self.settle_all()
            ordered = [j for j in reversed(self.jobs.values()) if j.provider == provider]
        ids = [j.id for j in ordered]
        if after is not None:
            if after not in ids:
                return [], False
            rest = ordered[ids.index(after) + 1 :]
            return rest[:limit], len(rest) > limit
        if before is not None:
            if before not in ids:
                return [], False
            rest = ordered[: ids.index(before)]
            return rest[-limit:], len(rest) > limit
        return ordered[:limit], len(ordered) > limit
