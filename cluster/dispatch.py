"""The dispatcher: a bounded window of actor calls in flight; a dead actor's batch goes back on the queue."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from apiflow.results.store import ResultStore
from cluster.plan import PlannedTrial
from cluster.spec import GridSpec
from cluster.worker import TrialOutcome, already_stored, stored_in_batches
from cluster.workqueue import WorkQueue

MAX_REQUEUES = 5
"""A trial whose actor died this many times is left for the next resume (a poison trial must not loop)."""


class Dispatcher:
    """Keeps a bounded window of actor calls in flight and re-queues the batches of dead actors."""

    def __init__(
        self,
        ray: Any,
        actors: list[Any],
        spec: GridSpec,
        calls_per_actor: int,
        window: int,
        store: ResultStore | None = None,
        *,
        actor_lost: tuple[type[BaseException], ...],
        admit: Callable[[list[PlannedTrial]], int] | None = None,
    ) -> None:
        self.ray = ray
        # The budget's say (``cluster.budget.Ledger.admit``): how many of a batch, from its front, may
        # start. A batch cut short goes back to the front of the queue and ``refused`` is set.
        self.admit = admit
        self.refused = False
        self.actor_lost = actor_lost  # what a call to a dead or unreachable actor raises
        self.store = store
        self.actors = actors
        self.spec = spec
        self.calls_per_actor = calls_per_actor
        self.window = window
        self.in_flight: dict[Any, tuple[int, list[PlannedTrial]]] = {}
        self.per_actor = [0] * len(actors)
        self.requeues: dict[str, int] = {}
        self.abandoned: list[str] = []
        # An actor whose call died is restarting (max_restarts=-1), perhaps on another node, perhaps
        # never (no room left after a node loss): send it nothing until a ping comes back.
        self.live = [True] * len(actors)
        self.probes: dict[Any, int] = {}
        # Slow start of provider trials (``concurrency.ramp_s``): the n-th of the first ``slots``
        # starts waits until n / slots of the ramp has passed.
        self.slots = len(actors) * calls_per_actor
        self.ramp_s = spec.concurrency.ramp_s
        self.started = 0
        self.ramp_began: float | None = None

    def _batch(self, queue: WorkQueue, index: int) -> list[PlannedTrial]:
        # Offline trials take milliseconds: batch them so Ray's per-call cost stays small.
        # Provider trials take minutes: one per call, the actor runs many calls at once.
        # A batch comes from one shelf: the actor's own while it lasts (its tasks' work is warm there).
        shelf = queue.shelf_for(index)
        assert shelf is not None
        if not self.spec.models[shelf[0].model_index].offline:
            return [queue.take(shelf)]
        batch: list[PlannedTrial] = []
        while (
            shelf
            and len(batch) < self.spec.concurrency.batch
            and self.spec.models[shelf[0].model_index].offline
        ):
            batch.append(queue.take(shelf))
        return batch

    def submit(self, queue: WorkQueue) -> bool:
        """Send one batch to the least busy actor; False when the window or every actor is full."""
        if not queue or len(self.in_flight) >= self.window:
            return False
        live = [i for i in range(len(self.actors)) if self.live[i]]
        if not live:
            return False
        index = min(live, key=self.per_actor.__getitem__)
        if self.per_actor[index] >= self.calls_per_actor or self.ramp_wait_s(queue, index) > 0:
            return False
        batch = self._batch(queue, index)
        if self.admit is not None:
            admitted = self.admit(batch)
            if admitted < len(batch):
                self.refused = True
                for planned in reversed(batch[admitted:]):
                    queue.appendleft(planned)
                batch = batch[:admitted]
                if not batch:
                    return False
        self.started += not self.spec.models[batch[0].model_index].offline
        self.in_flight[self.actors[index].run_batch.remote(batch)] = (index, batch)
        self.per_actor[index] += 1
        return True

    def ramp_wait_s(self, queue: WorkQueue, index: int = 0) -> float:
        """Seconds until the next provider trial of the ramp (actor ``index``'s next) may start (0: now)."""
        following = queue.peek(index)
        if (
            not self.ramp_s
            or self.started >= self.slots
            or following is None
            or self.spec.models[following.model_index].offline
        ):
            return 0.0
        now = time.monotonic()
        if self.ramp_began is None:
            self.ramp_began = now
        return max(0.0, self.ramp_began + self.started * self.ramp_s / self.slots - now)

    def collect(self, queue: WorkQueue, timeout_s: float = 0.5) -> tuple[list[TrialOutcome], int]:
        """Outcomes of finished calls, and how many trials went back on the queue."""
        refs = list(self.in_flight) + list(self.probes)
        if not refs:
            time.sleep(timeout_s)
            return [], 0
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout_s)
        if ready:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        outcomes: list[TrialOutcome] = []
        requeued = 0
        for ref in ready:
            if ref in self.probes:
                self._probed(ref)
                continue
            index, batch = self.in_flight.pop(ref)
            self.per_actor[index] -= 1
            try:
                outcomes.extend(self.ray.get(ref))
            except self.actor_lost:
                self._lost(index)
                found = self._committed(batch)
                outcomes.extend(already_stored(p) for p in batch if p.trial_id in found)
                for planned in reversed([p for p in batch if p.trial_id not in found]):
                    # back to the front: finish what was started first
                    count = self.requeues[planned.trial_id] = self.requeues.get(planned.trial_id, 0) + 1
                    if count > MAX_REQUEUES:
                        self.abandoned.append(planned.trial_id)
                        continue
                    queue.appendleft(planned)
                    requeued += 1
        return outcomes, requeued

    def _committed(self, batch: list[PlannedTrial]) -> set[str]:
        # A batch object is all-or-nothing and named by the batch's ids: if the dead actor
        # created it, those trials are stored (re-running them in another batch would store
        # them twice); if not, none of them is. A trial run alone checks its own row itself.
        if self.store is None or not stored_in_batches(self.spec, batch):
            return set()
        return self.store.batch_ids([p.trial_id for p in batch])

    def _lost(self, index: int) -> None:
        if self.live[index]:
            self.live[index] = False
            self.probes[self.actors[index].ping.remote()] = index

    def _probed(self, ref: Any) -> None:
        index = self.probes.pop(ref)
        try:
            self.ray.get(ref)
        except self.actor_lost:
            time.sleep(0.2)  # still restarting (or gone for good): ask again, never hot-loop
            self.probes[self.actors[index].ping.remote()] = index
            return
        self.live[index] = True

    @property
    def any_live(self) -> bool:
        """True while at least one actor can take work."""
        return any(self.live)
