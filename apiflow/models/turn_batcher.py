"""Turn-wave batching: the next turns of many live trials, sent to a provider's batch tier together.

At any moment a grid's worker holds dozens of trials, each waiting for its next model turn. A
``TurnBatcher`` (one per worker and model route) gathers those turns, submits them as one provider
batch when ``size`` are waiting or the oldest has waited ``wait_s``, polls the batch, and hands each
result back to the one trial that asked for it. A trial only ever waits for its own turn.

Money is spent once. Before a batch is submitted its requests are in the store's batch journal
(``apiflow.results.batch_journal``); its provider id follows. A trial replayed after a crash sends
the same custom ids (a digest of trial, turn and body), and the batcher answers them from the
journal: a collected result is read again, a batch still running is re-attached to, a batch whose
submission was never confirmed is looked for at the provider (``BatchApi.find``) before anything is
sent again. What the batch tier does not answer (a request that failed twice, or a batch cancelled
at the deadline) raises ``BatchMiss`` and the caller sends that turn on the synchronous tier;
cancelling first means no turn is paid on both (docs/design/048-batch-tier.md).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from apiflow.results.batch_journal import BatchJournal, Entry, batch_key

Result = dict[str, Any]
"""One request's outcome: ``{"ok": True, "body": <response body>}`` or ``{"ok": False, "kind":
"errored" | "expired" | "canceled", "error": <text>}``."""


HELD_BATCHES = 32
"""Collected batches whose results a batcher keeps in memory; older ones are read again from the
journal when a replayed trial asks (a grid's journal is every answer it paid for)."""


class BatchApi(Protocol):
    """A provider's batch endpoints for one route (the litellm adapter, or a test double)."""

    route: str

    async def submit(self, key: str, requests: list[dict[str, Any]]) -> str:
        """Create a batch of ``requests`` (``{"custom_id", "body"}``) tagged ``key``; its id."""
        ...

    async def ended(self, batch_id: str) -> bool:
        """Whether the batch has ended (completed, expired, cancelled or failed)."""
        ...

    async def results(self, batch_id: str) -> dict[str, Result]:
        """The ended batch's outcome for each custom id it held."""
        ...

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch (what it already answered stays billed and returned)."""
        ...

    async def find(self, key: str, custom_ids: list[str], since: float) -> str | None:
        """The id of a batch tagged ``key`` (or holding exactly ``custom_ids``) created after
        ``since``, or None when the provider surely has none."""
        ...


class BatchMiss(Exception):
    """The batch tier did not answer this turn; send it on the synchronous tier."""


@dataclass(frozen=True, slots=True)
class BatchSettings:
    """How turns are gathered and how long a batch may take.

    Attributes:
        size: Submit once this many turns wait.
        wait_s: ... or once the oldest waiting turn has waited this long.
        poll_s: Seconds between status checks of a running batch.
        deadline_s: A batch not ended this long after submission is cancelled; the turns it did not
            answer go to the synchronous tier (stragglers).
        resubmits: Times a turn whose request errored or expired goes into a later batch before the
            synchronous tier takes it.
    """

    size: int = 256
    wait_s: float = 30.0
    poll_s: float = 30.0
    deadline_s: float = 3600.0
    resubmits: int = 1


@dataclass(slots=True)
class _Turn:
    custom_id: str
    body: dict[str, Any]
    future: asyncio.Future[dict[str, Any]]
    tries: int = 0


class TurnBatcher:
    """Gathers one route's turns into provider batches (see the module docstring).

    Args:
        api: The route's batch endpoints.
        journal: The result store's batch journal, or None (nothing survives a crash: tests only).
        settings: Batch size, waits and deadline.
        clock / wall / sleep: Monotonic clock, wall clock (journal times) and sleep; injected in tests.
    """

    def __init__(
        self,
        api: BatchApi,
        journal: BatchJournal | None,
        settings: BatchSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.api = api
        self.journal = journal
        self.settings = settings or BatchSettings()
        self.clock, self.wall, self.sleep = clock, wall, sleep
        self.pending: list[_Turn] = []
        self.entries: dict[str, Entry] = {}
        self.waiting: dict[str, list[_Turn]] = {}
        """Batch key -> the turns waiting on it (a re-attached batch may have no waiter but these)."""
        self.watchers: dict[str, asyncio.Task[None]] = {}
        self.timer: asyncio.Task[None] | None = None
        self.lock = asyncio.Lock()
        self.by_id: dict[str, Entry] = {}
        """Custom id -> the latest batch on record that held it (a resubmission is later)."""
        self.indexed: set[str] = set()
        self.held: OrderedDict[str, dict[str, Result]] = OrderedDict()
        """Results of the batches read or collected last (a few: each may hold hundreds of turns)."""
        self.stats = {"batches": 0, "submitted": 0, "answered": 0, "from_journal": 0,
                      "reattached": 0, "resubmitted": 0, "missed": 0}  # fmt: skip

    async def call(self, custom_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """The response body the batch tier gives this turn; ``BatchMiss`` if it gives none."""
        paid = await self._paid(custom_id)  # a replayed trial's turn, paid before: at once
        if paid is not None:
            return paid
        turn = _Turn(custom_id, body, asyncio.get_running_loop().create_future())
        self._enqueue(turn)
        return await turn.future

    async def _paid(self, custom_id: str) -> dict[str, Any] | None:
        """The answer a collected batch on record gave ``custom_id``; None when none did."""
        entry = self.by_id.get(custom_id)
        if entry is None or not entry.collected:
            return None
        result = (await self._results(entry)).get(custom_id)
        if result is None or not result.get("ok"):
            return None
        self.stats["from_journal"] += 1
        return dict(result["body"])

    async def _results(self, entry: Entry) -> dict[str, Result]:
        """A collected batch's results, from memory or the journal."""
        if entry.key in self.held:
            self.held.move_to_end(entry.key)
            return self.held[entry.key]
        assert self.journal is not None  # collected without a journal: held from the start
        results = await asyncio.to_thread(self.journal.results, entry.key)
        self._hold(entry.key, results)
        return results

    def _hold(self, key: str, results: dict[str, Result]) -> None:
        self.held[key] = results
        while len(self.held) > HELD_BATCHES and self.journal is not None:
            self.held.popitem(last=False)

    def _index(self) -> None:
        """Add the entries not indexed yet to ``by_id`` (a later batch of an id wins)."""
        for entry in sorted(
            (e for k, e in self.entries.items() if k not in self.indexed), key=lambda e: e.created_at
        ):
            for cid in entry.custom_ids:
                now = self.by_id.get(cid)
                if now is None or now.created_at <= entry.created_at:
                    self.by_id[cid] = entry
            self.indexed.add(entry.key)

    def _enqueue(self, turn: _Turn) -> None:
        self.pending.append(turn)
        if len(self.pending) >= self.settings.size:
            asyncio.ensure_future(self._flush())
        elif self.timer is None or self.timer.done():
            self.timer = asyncio.ensure_future(self._flush_after(self.settings.wait_s))

    async def _flush_after(self, seconds: float) -> None:
        await self.sleep(seconds)
        await self._flush()

    async def _flush(self) -> None:
        async with self.lock:  # one submission at a time: each sees the journal the last one left
            if not self.pending:
                return
            turns, self.pending = self.pending[: self.settings.size], self.pending[self.settings.size :]
            if self.pending and (self.timer is None or self.timer.done()):
                self.timer = asyncio.ensure_future(self._flush_after(self.settings.wait_s))
            try:
                fresh = await self._answer_known(turns)
                if fresh:
                    await self._submit(fresh)
            except Exception as exc:  # noqa: BLE001 - the provider or the store failed: the sync tier takes over
                for turn in turns:
                    if not turn.future.done():
                        self._miss(turn, f"batch submission failed: {type(exc).__name__}: {exc}")
        # Turns enqueued while this flush ran saw the timer (this very task, when it is the timer) not
        # done and armed none: without this they would wait for the next turn to arrive, forever at a
        # run's end.
        if self.pending and (self.timer is None or self.timer.done() or self.timer is asyncio.current_task()):
            self.timer = asyncio.ensure_future(self._flush_after(self.settings.wait_s))

    async def _answer_known(self, turns: list[_Turn]) -> list[_Turn]:
        """Answer or attach the turns the journal knows; the rest must be sent."""
        if self.journal is not None:
            self.entries = await asyncio.to_thread(self.journal.entries, self.entries)
        self._index()
        fresh = []
        for turn in turns:
            entry = self.by_id.get(turn.custom_id)
            if entry is None:
                fresh.append(turn)
            elif entry.collected:
                paid = await self._paid(turn.custom_id)
                if paid is not None:
                    turn.future.set_result(paid)
                else:
                    fresh.append(turn)  # it failed there: paid for nothing, send it again
            else:
                if entry.batch_id is None:
                    found = await self.api.find(entry.key, entry.custom_ids, entry.created_at)
                    if found is None:  # never reached the provider: its ids are free again
                        self.entries.pop(entry.key, None)
                        for cid in entry.custom_ids:
                            if self.by_id.get(cid) is entry:
                                del self.by_id[cid]
                        fresh.append(turn)
                        continue
                    entry.batch_id = found
                    if self.journal is not None:
                        await asyncio.to_thread(self.journal.write_submitted, entry.key, found)
                self.stats["reattached"] += 1
                self._wait_on(entry, turn)
        return fresh

    async def _submit(self, turns: list[_Turn]) -> None:
        requests = [{"custom_id": t.custom_id, "body": t.body} for t in turns]
        key = batch_key([t.custom_id for t in turns])
        entry = Entry(key, self.api.route, [t.custom_id for t in turns], created_at=self.wall())
        if self.journal is not None:  # before the provider sees it: a crash after this is found again
            await asyncio.to_thread(
                self.journal.write_intent, key, self.api.route, requests, entry.created_at
            )
        entry.batch_id = await self.api.submit(key, requests)
        if self.journal is not None:
            await asyncio.to_thread(self.journal.write_submitted, key, entry.batch_id)
        self.entries[key] = entry
        self._index()
        self.stats["batches"] += 1
        self.stats["submitted"] += len(turns)
        for turn in turns:
            self._wait_on(entry, turn)

    def _wait_on(self, entry: Entry, turn: _Turn) -> None:
        self.waiting.setdefault(entry.key, []).append(turn)
        if entry.key not in self.watchers:
            self.watchers[entry.key] = asyncio.ensure_future(self._watch(entry))

    async def _watch(self, entry: Entry) -> None:
        assert entry.batch_id is not None
        began, cancelled = self.clock(), False
        try:
            while not await self.api.ended(entry.batch_id):
                if not cancelled and self.clock() - began > self.settings.deadline_s:
                    await self.api.cancel(entry.batch_id)  # before the sync tier: never paid twice
                    cancelled = True
                await self.sleep(self.settings.poll_s)
            results = await self.api.results(entry.batch_id)
            if self.journal is not None:
                await asyncio.to_thread(self.journal.write_results, entry.key, results)
            self._hold(entry.key, results)
            entry.collected = True
        except Exception as exc:  # noqa: BLE001 - its turns go to the sync tier; the journal keeps the id
            results = {cid: {"ok": False, "kind": "lost", "error": f"{type(exc).__name__}: {exc}"}
                       for cid in entry.custom_ids}  # fmt: skip
        finally:
            self.watchers.pop(entry.key, None)
        for turn in self.waiting.pop(entry.key, []):
            self._settle(turn, results.get(turn.custom_id))

    def _settle(self, turn: _Turn, result: Result | None) -> None:
        if turn.future.done():  # the trial was cancelled meanwhile
            return
        if result is not None and result.get("ok"):
            self.stats["answered"] += 1
            turn.future.set_result(result["body"])
            return
        kind = (result or {}).get("kind", "missing")
        if kind in ("errored", "expired") and turn.tries < self.settings.resubmits:
            turn.tries += 1
            self.stats["resubmitted"] += 1
            self._enqueue(turn)
            return
        self._miss(turn, f"the batch tier did not answer ({kind}): {(result or {}).get('error', '')}".strip())

    def _miss(self, turn: _Turn, why: str) -> None:
        self.stats["missed"] += 1
        turn.future.set_exception(BatchMiss(why))

    async def close(self) -> None:
        """Stop the timer and watchers (a worker's end: their batches stay in the journal)."""
        tasks = [t for t in (self.timer, *self.watchers.values()) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
