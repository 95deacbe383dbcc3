"""The started actors and the loop that feeds them (docs/design/040, "Scheduling").

A ``Fleet`` holds what ``cluster.driver`` started for one run (the trial workers, the budget ledger,
the provider gates) and drives trials through them: a bounded window of actor calls, outcomes
tallied, a dead actor's batch re-queued, an account out of quota parked, the budget's checkpoint
and the folder's lease kept. ``run`` may be called again with more trials (the waves of an adaptive
sweep, ``cluster.waves``): the actors, the ledger and the gates stay up in between. Ray itself is
reached through the session's handle only (``cluster.session.Ray.ray``).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from apiflow.errors import UsageError
from apiflow.models.retry import QUOTA_KIND
from apiflow.results.lease import TTL_S, Lease, LeaseLost
from apiflow.results.store import ResultStore
from apiflow.results.taskid import parse_task_id
from cluster.budget import SpendOnRecord, checkpoint
from cluster.dispatch import Dispatcher
from cluster.plan import PlannedTrial
from cluster.progress import GridProgress, Tally
from cluster.report import GridSummary
from cluster.spec import GridSpec
from cluster.worker import TrialOutcome
from cluster.workqueue import WorkQueue

STALL_S = 180.0
"""With trials queued, no call in flight and no live actor for this long, the run ends (incomplete,
resumable) instead of waiting forever for actors that cannot be placed (a lost node)."""

CHECKPOINT_S = 1.0
"""How often the budget ledger's checkpoint is written (it bounds the spend a driver kill can hide)."""


def tally_outcome(tally: Tally, outcome: TrialOutcome, summary: GridSummary) -> None:
    """Count one trial's outcome into this run's tally and its model's counters."""
    tally.done += 1
    model = summary.model(outcome.model_index)
    if not outcome.stored and outcome.termination == "already_stored":
        tally.duplicates += 1
        return
    if outcome.stored:
        tally.stored_usd += outcome.cost_usd
    tally.stored += outcome.stored and not outcome.harness
    tally.retries += outcome.retries
    tally.spent_usd += outcome.cost_usd
    model["spent_usd"] += outcome.cost_usd
    if outcome.harness:
        tally.harness += 1
        model["harness"] += 1
        summary.unscored(outcome)
    elif outcome.passed is not None:
        tally.scored += 1
        tally.passed += bool(outcome.passed)
        model["scored"] += 1
        model["passed"] += bool(outcome.passed)


class Checkpoints:
    """Writes the ledger checkpoint off the driver loop (a paused object store must not stall it)."""

    def __init__(self, store: ResultStore, attempt: str, base: SpendOnRecord | None) -> None:
        self.store = store
        self.attempt = attempt
        self.base = base or SpendOnRecord(0.0, 0.0, 0.0, 0)
        self.last = 0.0
        self.writer: threading.Thread | None = None
        self.errors = 0

    def due(self) -> bool:
        return time.monotonic() - self.last >= CHECKPOINT_S and not (self.writer and self.writer.is_alive())

    def write(self, ledger: dict[str, Any], stored_usd: float, wait: bool = False) -> None:
        self.last = time.monotonic()
        data = checkpoint(self.attempt, ledger, self.base, stored_usd)

        def put() -> None:
            try:
                self.store.write_checkpoint(self.attempt, data)
            except Exception:  # noqa: BLE001 - the next checkpoint retries; a run must not die of it
                self.errors += 1

        if self.writer is not None:
            self.writer.join()
        self.writer = threading.Thread(target=put, daemon=True)
        self.writer.start()
        if wait:
            self.writer.join(timeout=60)


def park(spec: GridSpec, queue: WorkQueue, summary: GridSummary, outcome: TrialOutcome) -> None:
    """The provider's account is out of quota or credit: its unsent trials stay pending for the next run
    (no retry would help, and each would fail the same way)."""
    provider = spec.models[outcome.model_index].provider
    if provider in summary.parked:
        return
    left = queue.remove(lambda p: spec.models[p.model_index].provider == provider)
    summary.parked[provider] = left
    print(f"[grid] provider {provider} parked: its account is out of quota or credit; {left} of its "
          "trials stay pending for the next run", file=sys.stderr, flush=True)  # fmt: skip


class Fleet:
    """One run's started actors, ledger and gates, and the loop that drives trials through them.

    Args:
        ray: The Ray module of the session (``cluster.session.Ray.ray``).
        actors, gates, ledger: What ``cluster.driver.start_actors`` started.
        expected: A trial's expected cost by (model index, task kind, length): what the ledger admits by.
        total: The trials this run may send (the live line's count and ETA).
        journal: The ledger's checkpoint writer (with a budget); ``lease``: the folder's, renewed here.
    """

    def __init__(
        self, ray: Any, spec: GridSpec, summary: GridSummary, actors: list[Any], gates: dict[str, Any],
        ledger: Any, *, expected: dict[tuple[int, str, int], float], total: int, progress: bool = True,
        journal: Checkpoints | None = None, lease: Lease | None = None,
    ) -> None:  # fmt: skip
        from cluster.actors import ACTOR_LOST

        self.ray, self.spec, self.summary = ray, spec, summary
        self.actors, self.gates, self.ledger = actors, gates, ledger
        self.expected, self.journal, self.lease, self.progress = expected, journal, lease, progress
        self.calls = 2 if all(m.offline for m in spec.models) else spec.concurrency.trials_per_actor
        window = spec.concurrency.window or 2 * len(actors) * self.calls
        admit = self._admit if ledger is not None else None
        store = ResultStore(spec.out, spec.storage_options)
        self.dispatcher = Dispatcher(
            ray, actors, spec, self.calls, window, store, actor_lost=ACTOR_LOST, admit=admit
        )
        spent_before = summary.on_record.total_usd if summary.on_record else 0.0
        self.tally = Tally(total=total, on_record_usd=spent_before, cap_usd=spec.budget_usd)
        summary.tally = self.tally  # kept on the summary as it runs: a Ctrl-C still reports what was stored
        self.admitting = True
        self.left: WorkQueue = WorkQueue((), len(actors))
        self.last_stats = 0.0
        self.began = self.cpu_before = 0.0
        self.display: GridProgress | None = None

    def _admit(self, batch: list[PlannedTrial]) -> int:
        asked = []
        for p in batch:
            ref = parse_task_id(p.task_id)
            asked.append((p.trial_id, p.model_index, self.expected[(p.model_index, ref.kind, ref.length)]))
        return int(self.ray.get(self.ledger.admit.remote(asked)))

    def wait_ready(self, began: float) -> None:
        """Wait for every actor, but not forever: one that cannot be placed (a node lost, its CPUs gone)
        must not hang the run; it joins through the dispatcher's probes when it comes up."""
        pings = {a.ping.remote(): i for i, a in enumerate(self.actors)}
        ready, _ = self.ray.wait(list(pings), num_returns=len(pings), timeout=STALL_S)
        if not ready:
            raise UsageError(f"no worker actor started within {STALL_S:.0f} s: is the cluster short of CPUs?")
        self.summary.phases["actors_s"] = time.monotonic() - began
        for ref, index in pings.items():
            if ref not in ready:
                self.dispatcher.live[index] = False
                self.dispatcher.probes[ref] = index

    @contextmanager
    def live(self) -> Iterator[Fleet]:
        """The trial phase: the live progress display, and its time and the driver's CPU counted."""
        self.began, self.cpu_before = time.monotonic(), time.process_time()
        self.tally.began = self.began  # the live line's clock starts with the trials, not the actors
        with GridProgress(self.tally.total, enabled=self.progress) as display:
            self.display = display
            yield self

    @property
    def halted(self) -> bool:
        """Nothing more may be sent this run: the budget closed, the folder's lease was lost, no actor
        could be placed, or a provider's account ran dry."""
        s = self.summary
        return not self.admitting or bool(s.lease_lost) or s.stalled or bool(s.parked)

    def run(self, todo: list[PlannedTrial]) -> None:
        """Drive ``todo`` until each is stored, unscored or left (budget, lease, stall, parked)."""
        spec, ray, tally, dispatcher, ledger = self.spec, self.ray, self.tally, self.dispatcher, self.ledger
        queue = self.left = WorkQueue(todo, len(self.actors))
        idle_since = time.monotonic()
        while queue or dispatcher.in_flight:
            dispatcher.refused = False
            while self.admitting and dispatcher.submit(queue):
                pass
            if dispatcher.refused and not dispatcher.in_flight:
                self.admitting = False  # the next trial does not fit and nothing running can make room
            if not dispatcher.in_flight:
                if not self.admitting:
                    break  # budget closed and nothing running
                if dispatcher.any_live:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > STALL_S:
                    self.summary.stalled = True
                    break  # no actor came back: stop, resumable, rather than hang
            # During a ramp, wake for its next start rather than the usual half second.
            outcomes, requeued = dispatcher.collect(queue, min(0.5, dispatcher.ramp_wait_s(queue)) or 0.5)
            tally.requeued += requeued
            for outcome in outcomes:
                tally_outcome(tally, outcome, self.summary)
                if outcome.fault == QUOTA_KIND:
                    park(spec, queue, self.summary, outcome)
            if ledger is not None and outcomes:  # room the ended trials leave, and what they taught
                ended = [(o.trial_id, o.stored and not o.harness) for o in outcomes]
                self.admitting = bool(ray.get(ledger.finish.remote(ended))) and self.admitting
            self._keep_lease(queue)
            if self.journal is not None and ledger is not None and self.journal.due():
                state = ray.get(ledger.summary.remote())
                self.journal.write(state, tally.stored_usd)
                tally.ledger_usd = state["spent_usd"]
            if self.gates and time.monotonic() - self.last_stats > 2.0:
                self.last_stats = time.monotonic()
                stats = ray.get([g.stats.remote() for g in self.gates.values()])
                tally.gate_wait_s = sum(s["waited_s"] for s in stats)
                tally.rate_limited = sum(s["rate_limited"] for s in stats)
                tally.gate_rpm = {s["provider"]: s["rpm"] for s in stats if s.get("adaptive")}
            if self.display is not None:
                self.display.update(tally)

    def _keep_lease(self, queue: WorkQueue) -> None:
        lease = self.lease
        if lease is not None and time.time() > lease.expires - TTL_S * 5 / 6:
            try:
                lease.renew()
            except LeaseLost as lost:  # another driver holds the folder now: send nothing more
                self.summary.lease_lost = str(lost)
                self.admitting = False
                queue.remove(lambda _: True)

    def finish(self) -> Tally:
        """Close the trial phase: what was left unsent, the ledger's last word and checkpoint, the gates' stats."""
        summary, ray = self.summary, self.ray
        summary.phases["trials_s"] = time.monotonic() - self.began
        summary.driver_trial_cpu_s = time.process_time() - self.cpu_before
        summary.not_started = len(self.left)
        summary.abandoned = len(self.dispatcher.abandoned)
        summary.budget_reached = self.ledger is not None and not self.admitting
        if self.ledger is not None:
            summary.ledger = ray.get(self.ledger.summary.remote())
            if self.journal is not None:
                self.journal.write(summary.ledger, self.tally.stored_usd, wait=True)
        if self.gates:
            summary.gates = ray.get([g.stats.remote() for g in self.gates.values()])
        return self.tally
