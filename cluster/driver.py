"""The grid driver: plan, skip what is stored, feed async actors through a bounded window.

Run it as ``python -m cluster.driver GRID.yaml [--out URL] [--address auto|URL] [--budget-usd X]
[--dry-run]`` — also the entrypoint of ``ray job submit --working-dir . -- python -m
cluster.driver GRID.yaml`` and of ``apiflow grid run``. Scheduling is at-least-once (a batch
whose actor died is re-queued); storage is exactly-once (create-only rows), so a rerun of an
interrupted grid completes it with no duplicate and no lost trial.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

from apiflow.errors import UsageError
from apiflow.gridcli import add_run_flags
from apiflow.results.prices import load_price_table
from apiflow.results.store import ResultStore
from cluster.budget import worst_case_usd
from cluster.manifest import attempt_info, build_manifest, grid_id
from cluster.plan import PlannedTrial, plan_grid, remaining
from cluster.progress import GridProgress, Tally
from cluster.report import GridSummary, estimate_cost, print_estimate
from cluster.spec import GridSpec, load_grid
from cluster.worker import DEFAULT_MAX_TOKENS, TrialOutcome, load_checked_bank, price_for

MAX_REQUEUES = 5
"""A trial whose actor died this many times is left for the next resume (a poison trial must not loop)."""


def absolute_paths(spec: GridSpec, base: Path | None = None) -> GridSpec:
    """Make relative local paths absolute so every actor, wherever it runs, reads the same files."""
    base = base or Path.cwd()

    def fix(value: str | None) -> str | None:
        if value is None or "://" in value or Path(value).is_absolute():
            return value
        return str((base / value).resolve())

    return spec.with_overrides(bank=fix(spec.bank), price_table=fix(spec.price_table), out=fix(spec.out))


class Ray:
    """Connect to a cluster, or start (and later stop) a private local one.

    ``APIFLOW_RAY_TEMP_DIR`` names the private Ray's temp dir (tests use it to find and stop
    exactly the processes they started); by default a fresh ``/tmp/apiflow-ray-*``.
    """

    def __init__(self, address: str | None) -> None:
        import ray

        self.ray = ray
        self.started_here = False
        self.temp_dir: str | None = None
        if ray.is_initialized():
            return  # the caller (a test, a notebook) already holds a Ray session
        if address is None and not os.environ.get("RAY_ADDRESS"):
            temp_dir = os.environ.get("APIFLOW_RAY_TEMP_DIR") or tempfile.mkdtemp(prefix="apiflow-ray-")
            self.temp_dir = None if os.environ.get("APIFLOW_RAY_TEMP_DIR") else temp_dir
            ray.init(
                num_cpus=os.cpu_count() or 2,
                include_dashboard=False,
                _temp_dir=temp_dir,
                logging_level=logging.ERROR,
                log_to_driver=False,
            )
            self.started_here = True
        else:
            ray.init(address=address or os.environ.get("RAY_ADDRESS"), logging_level=logging.ERROR)

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        if self.started_here:
            self.ray.shutdown()
            if self.temp_dir:  # ours alone: logs of a private local Ray are not kept
                shutil.rmtree(self.temp_dir, ignore_errors=True)


class Dispatcher:
    """Keeps a bounded window of actor calls in flight and re-queues the batches of dead actors."""

    def __init__(
        self, ray: Any, actors: list[Any], spec: GridSpec, calls_per_actor: int, window: int
    ) -> None:
        self.ray = ray
        self.actors = actors
        self.spec = spec
        self.calls_per_actor = calls_per_actor
        self.window = window
        self.in_flight: dict[Any, tuple[int, list[PlannedTrial]]] = {}
        self.per_actor = [0] * len(actors)
        self.requeues: dict[str, int] = {}
        self.abandoned: list[str] = []

    def _batch(self, queue: deque[PlannedTrial]) -> list[PlannedTrial]:
        # Offline trials take milliseconds: batch them so Ray's per-call cost stays small.
        # Provider trials take minutes: one per call, the actor runs many calls at once.
        if not self.spec.models[queue[0].model_index].offline:
            return [queue.popleft()]
        batch: list[PlannedTrial] = []
        while (
            queue
            and len(batch) < self.spec.concurrency.batch
            and self.spec.models[queue[0].model_index].offline
        ):
            batch.append(queue.popleft())
        return batch

    def submit(self, queue: deque[PlannedTrial]) -> bool:
        """Send one batch to the least busy actor; False when the window or every actor is full."""
        if not queue or len(self.in_flight) >= self.window:
            return False
        index = min(range(len(self.actors)), key=self.per_actor.__getitem__)
        if self.per_actor[index] >= self.calls_per_actor:
            return False
        batch = self._batch(queue)
        self.in_flight[self.actors[index].run_batch.remote(batch)] = (index, batch)
        self.per_actor[index] += 1
        return True

    def collect(self, queue: deque[PlannedTrial], timeout_s: float = 0.5) -> tuple[list[TrialOutcome], int]:
        """Outcomes of finished calls, and how many trials went back on the queue."""
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

        refs = list(self.in_flight)
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout_s)
        if ready:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        outcomes: list[TrialOutcome] = []
        requeued = 0
        for ref in ready:
            index, batch = self.in_flight.pop(ref)
            self.per_actor[index] -= 1
            try:
                outcomes.extend(self.ray.get(ref))
            except (RayActorError, ActorDiedError, ActorUnavailableError):
                for planned in reversed(batch):  # back to the front: finish what was started first
                    count = self.requeues[planned.trial_id] = self.requeues.get(planned.trial_id, 0) + 1
                    if count > MAX_REQUEUES:
                        self.abandoned.append(planned.trial_id)
                        continue
                    queue.appendleft(planned)
                    requeued += 1
        return outcomes, requeued


def _tally(tally: Tally, outcome: TrialOutcome, summary: GridSummary) -> None:
    tally.done += 1
    model = summary.model(outcome.model_index)
    if not outcome.stored and outcome.termination == "already_stored":
        tally.duplicates += 1
        return
    tally.stored += outcome.stored and not outcome.harness
    tally.retries += outcome.retries
    tally.spent_usd += outcome.cost_usd
    model["spent_usd"] += outcome.cost_usd
    if outcome.harness:
        tally.harness += 1
        model["harness"] += 1
        tally.budget_refused += outcome.budget_refused
    elif outcome.passed is not None:
        tally.scored += 1
        tally.passed += bool(outcome.passed)
        model["scored"] += 1
        model["passed"] += bool(outcome.passed)


def _start_actors(ray: Any, spec: GridSpec, run_id: str, cpus: int) -> tuple[list[Any], dict[str, Any], Any]:
    from cluster.budget import BudgetLedger
    from cluster.ratelimit import ProviderGate
    from cluster.worker import TrialWorker

    # @ray.remote classes: mypy sees the plain class, Ray adds ``options``/``remote``.
    gate_cls: Any = ProviderGate
    ledger_cls: Any = BudgetLedger
    worker_cls: Any = TrialWorker

    providers = {m.provider for m in spec.models if not m.offline and m.provider}
    gates = {}
    for provider in sorted(providers):
        if provider in spec.ratelimits:
            limit = spec.ratelimits[provider]
            tpm = limit.tpm * limit.headroom if limit.tpm else None
            gates[provider] = gate_cls.options(num_cpus=0).remote(
                provider, limit.rpm * limit.headroom, tpm, limit.burst_s
            )
    ledger = ledger_cls.options(num_cpus=0).remote(spec.budget_usd) if spec.budget_usd else None
    n_actors = spec.concurrency.actors or cpus
    offline_only = all(m.offline for m in spec.models)
    calls = 2 if offline_only else spec.concurrency.trials_per_actor
    spec_ref = ray.put(spec.model_dump_json())  # held by the driver: restarts re-read their arguments
    actors = [
        worker_cls.options(num_cpus=min(1.0, cpus / n_actors), max_concurrency=max(calls, 2)).remote(
            spec_ref, run_id, gates, ledger
        )
        for _ in range(n_actors)
    ]
    actors_keepalive.append(spec_ref)
    return actors, gates, ledger


actors_keepalive: list[Any] = []
"""Object refs of actor constructor arguments, kept for the driver's lifetime."""


def run_grid(
    spec: GridSpec, *, address: str | None = None, dry_run: bool = False, progress: bool = True
) -> GridSummary:
    """Run (or resume) a grid until every planned trial is stored, the budget is reached, or it fails.

    Args:
        spec: The grid.
        address: Ray address (``auto`` or ``ray://…``/``host:port``); None starts a private local Ray
            unless ``RAY_ADDRESS`` is set (as it is inside ``ray job submit``).
        dry_run: Plan, print the estimate and stop (no Ray, nothing written).
        progress: Show the live progress display.

    Returns:
        What happened, for the caller to print (``GridSummary.lines()``).
    """
    started = time.monotonic()
    spec = absolute_paths(spec)
    bank = load_checked_bank(spec)
    prices = load_price_table(spec.price_table)
    model_prices = [price_for(prices, m) for m in spec.models]
    plan = plan_grid(spec, bank)
    store = ResultStore(spec.out, spec.storage_options)
    todo = remaining(plan, store.done_ids())
    summary = GridSummary(spec=spec, planned=len(plan), already_done=len(plan) - len(todo))
    print_estimate(spec, estimate_cost(spec, todo, model_prices), len(plan), len(todo))
    if dry_run or not todo:
        summary.wall_s = time.monotonic() - started
        return summary
    gid = grid_id(spec, bank)
    run_id = gid[:22]
    store.write_manifest(build_manifest(spec, bank, prices, len(plan)))
    store.write_attempt(
        f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}", attempt_info(run_id, {"address": address})
    )
    summary.phases["plan_s"] = time.monotonic() - started
    cluster = Ray(address)
    summary.phases["ray_start_s"] = time.monotonic() - started - summary.phases["plan_s"]
    try:
        summary.tally = _drive(cluster, spec, run_id, todo, model_prices, summary, progress)
    finally:
        cluster.close()
    summary.wall_s = time.monotonic() - started
    summary.driver_peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return summary


def _drive(cluster: Ray, spec: GridSpec, run_id: str, todo: list[PlannedTrial], model_prices: list[Any],
           summary: GridSummary, progress: bool) -> Tally:  # fmt: skip
    ray = cluster.ray
    began = time.monotonic()
    actors, gates, ledger = _start_actors(ray, spec, run_id, cluster.cpus())
    ray.get([a.ping.remote() for a in actors])
    summary.phases["actors_s"] = time.monotonic() - began
    began = time.monotonic()
    calls = 2 if all(m.offline for m in spec.models) else spec.concurrency.trials_per_actor
    window = spec.concurrency.window or 2 * len(actors) * calls
    dispatcher = Dispatcher(ray, actors, spec, calls, window)
    next_call = max(
        worst_case_usd(spec.estimate.call_prompt_tokens, m.max_tokens or DEFAULT_MAX_TOKENS, p)
        for m, p in zip(spec.models, model_prices, strict=True)
    )
    queue, tally, admitting, last_stats = deque(todo), Tally(), True, 0.0
    with GridProgress(len(todo), enabled=progress) as display:
        while queue or dispatcher.in_flight:
            if ledger is not None and queue and admitting:
                admitting = ray.get(ledger.admit.remote(next_call))
            while admitting and dispatcher.submit(queue):
                pass
            if not dispatcher.in_flight:
                break  # budget closed and nothing running
            outcomes, requeued = dispatcher.collect(queue)
            tally.requeued += requeued
            for outcome in outcomes:
                _tally(tally, outcome, summary)
            if gates and time.monotonic() - last_stats > 2.0:
                last_stats = time.monotonic()
                stats = ray.get([g.stats.remote() for g in gates.values()])
                tally.gate_wait_s = sum(s["waited_s"] for s in stats)
                tally.rate_limited = sum(s["rate_limited"] for s in stats)
            display.update(tally)
    summary.phases["trials_s"] = time.monotonic() - began
    actors_keepalive.clear()
    summary.not_started = len(queue)
    summary.abandoned = len(dispatcher.abandoned)
    summary.budget_reached = ledger is not None and (not admitting or tally.budget_refused > 0)
    if ledger is not None:
        summary.ledger = ray.get(ledger.summary.remote())
    if gates:
        summary.gates = ray.get([g.stats.remote() for g in gates.values()])
    return tally


def build_arg_parser() -> argparse.ArgumentParser:
    """Flags shared by ``python -m cluster.driver`` and ``apiflow grid run``."""
    parser = argparse.ArgumentParser(prog="python -m cluster.driver", description="Run or resume a grid.")
    add_run_flags(parser)
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    """Load the grid, apply the flags, run, print the summary; exit status 0 when complete."""
    spec = load_grid(args.grid)
    if args.budget_usd is not None and args.budget_usd <= 0:
        raise UsageError("--budget-usd must be positive")
    spec = spec.with_overrides(out=args.out, budget_usd=args.budget_usd)
    summary = run_grid(spec, address=args.address, dry_run=args.dry_run, progress=not args.no_progress)
    for line in summary.lines(dry_run=args.dry_run):
        print(line)
    return 0 if args.dry_run or summary.complete else 3


def main(argv: list[str] | None = None) -> int:
    """``python -m cluster.driver`` entry point."""
    try:
        return run_from_args(build_arg_parser().parse_args(argv))
    except UsageError as exc:
        print(f"apiflow: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
