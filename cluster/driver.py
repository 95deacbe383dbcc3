"""The grid driver: plan, skip what is stored, feed async actors through a bounded window.

Run it as ``python -m cluster.driver GRID.yaml [--out URL] [--address auto|URL] [--budget-usd X]
[--dry-run]`` — also the entrypoint of ``ray job submit --working-dir . -- python -m
cluster.driver GRID.yaml`` and of ``apiflow grid run``. Scheduling is at-least-once (a batch
whose actor died is re-queued); storage is exactly-once (create-only rows), so a rerun of an
interrupted grid completes it with no duplicate and no lost trial.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apiflow.cli.grid import add_run_flags
from apiflow.errors import UsageError, one_line_errors
from apiflow.models.retry import QUOTA_KIND
from apiflow.results.lease import TTL_S, Lease, LeaseLost, check_free, holder_name, take_lease
from apiflow.results.prices import load_price_table
from apiflow.results.storage import check_output
from apiflow.results.store import ResultStore
from apiflow.results.taskid import parse_task_id
from cluster.budget import SpendOnRecord, checkpoint, spend_on_record
from cluster.dispatch import Dispatcher
from cluster.estimate import estimate_grid, estimate_lines, expected_costs
from cluster.extend import check_extension, extended_manifest
from cluster.manifest import attempt_info, build_manifest, grid_canary_key, grid_id, settled_seed
from cluster.plan import PlannedTrial, plan_grid, resume_plan
from cluster.preflight import missing_keys, node_keys, rejected_keys
from cluster.progress import GridProgress, Tally
from cluster.report import GridSummary
from cluster.selection import Selection
from cluster.session import Ray
from cluster.spec import GridSpec, load_grid
from cluster.verify import verify_store
from cluster.worker import TrialOutcome, load_checked_bank, price_for
from cluster.workqueue import WorkQueue

STALL_S = 180.0
"""With trials queued, no call in flight and no live actor for this long, the run ends (incomplete,
resumable) instead of waiting forever for actors that cannot be placed (a lost node)."""

CHECKPOINT_S = 1.0
"""How often the budget ledger's checkpoint is written (it bounds the spend a driver kill can hide)."""


JOB_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"
"""Set by Ray in the environment of a ``ray job submit`` entrypoint (and only there)."""


def check_job_out(out: str, env: Mapping[str, str] | None = None) -> None:
    """Refuse a relative local ``--out`` under ``ray job submit``.

    A job runs in Ray's temporary copy of the uploaded working folder, deleted with the cluster:
    results written there would vanish, so the user must say where they go.
    """
    env = os.environ if env is None else env
    if JOB_ENV in env and "://" not in out and not Path(out).is_absolute():
        raise UsageError(
            f"--out {out} is relative: under `ray job submit` it would land in Ray's temporary copy of the "
            'working folder and vanish with the cluster; give an absolute path (e.g. --out "$PWD/results/demo" '
            "on a local head) or an s3:// URL"
        )


def absolute_paths(spec: GridSpec, base: Path | None = None) -> GridSpec:
    """Make relative local paths absolute so every actor, wherever it runs, reads the same files."""
    base = base or Path.cwd()

    def fix(value: str | None) -> str | None:
        if value is None or "://" in value or Path(value).is_absolute():
            return value
        return str((base / value).resolve())

    return spec.with_overrides(bank=fix(spec.bank), price_table=fix(spec.price_table), out=fix(spec.out))


def _tally(tally: Tally, outcome: TrialOutcome, summary: GridSummary) -> None:
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


def _start_actors(
    ray: Any, spec: GridSpec, run_id: str, cpus: int, spent_usd: float = 0.0, guessed: frozenset[int] = frozenset()
) -> tuple[list[Any], dict[str, Any], Any]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from cluster.actors import BudgetLedger, ProviderGate, TrialWorker

    # The ledger and the gates hold state no restart could recover: they live on the driver's own
    # node, so losing any other node cannot take them (and losing this one takes the driver too).
    here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
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
            gates[provider] = gate_cls.options(num_cpus=0, scheduling_strategy=here).remote(
                provider, limit.rpm * limit.headroom, tpm, limit.burst_s, limit.adaptive
            )
    ledger = (
        ledger_cls.options(num_cpus=0, scheduling_strategy=here).remote(spec.budget_usd, spent_usd, guessed)
        if spec.budget_usd
        else None
    )
    n_actors = spec.concurrency.actors or cpus
    offline_only = all(m.offline for m in spec.models)
    calls = 2 if offline_only else spec.concurrency.trials_per_actor
    # The spec goes by value, never as an ObjectRef: Ray keeps a restartable actor's inline
    # arguments in its creation spec, while one held in the object store is lost with its owner
    # and makes Ray log a core_worker ERROR for every such actor (ray-project/ray#53727).
    spec_json = inline_spec(spec)
    actors = [
        # SPREAD: workers over every node, so a lost node takes a share of the work, not all of it.
        worker_cls.options(
            num_cpus=min(1.0, cpus / n_actors), max_concurrency=max(calls, 2), scheduling_strategy="SPREAD"
        ).remote(spec_json, run_id, gates, ledger)
        for _ in range(n_actors)
    ]
    return actors, gates, ledger


INLINE_ARG_BYTES = 100 * 1024
"""Ray's ``max_direct_call_object_size``: a larger argument is moved to the object store."""


def inline_spec(spec: GridSpec) -> str | bytes:
    """The spec as the worker's constructor argument: its JSON, zlib-compressed when too large
    for Ray to pass inline (``TrialWorker`` takes either); refused if even that is too large."""
    text = spec.model_dump_json()
    if len(text.encode()) < INLINE_ARG_BYTES:
        return text
    packed = zlib.compress(text.encode(), 9)
    if len(packed) >= INLINE_ARG_BYTES:
        raise UsageError(
            f"grid spec is {len(text.encode()) // 1024} KiB as JSON; keep it under a few MiB "
            "(a long tasks.ids list belongs in a bank of its own)"
        )
    return packed


def run_grid(
    spec: GridSpec, *, address: str | None = None, dry_run: bool = False, progress: bool = True,
    retry_unscored: bool = False, extend: bool = False, selection: Selection | None = None,
) -> GridSummary:
    """Run (or resume) a grid until every planned trial is stored, the budget is reached, or it fails.

    Args:
        spec: The grid.
        address: Ray address (``auto`` or ``ray://…``/``host:port``); None starts a private local Ray
            unless ``RAY_ADDRESS`` is set (as it is inside ``ray job submit``).
        dry_run: Plan, print the estimate and stop (no Ray, nothing written).
        progress: Show the live progress display.
        retry_unscored: Also run the trials already unscored ``spec.max_unscored_attempts`` times.
        extend: The output holds a grid this one extends (more epochs, models or tasks): run only the
            new trials beside the stored ones (``cluster.extend``).
        selection: Run only this part of the grid's plan (``--models/--tasks/--epochs``); the grid,
            its id and its manifest stay whole, the rest stays pending.

    Returns:
        What happened, for the caller to print (``GridSummary.lines()``).
    """
    started = time.monotonic()
    if not dry_run:
        check_job_out(spec.out)
    spec = absolute_paths(spec)
    bank = load_checked_bank(spec)
    prices = load_price_table(spec.price_table)
    model_prices = [price_for(prices, m) for m in spec.models]
    seed_drawn = spec.seed is None
    if not dry_run:
        check_output(spec.out)  # a file or a read-only folder: refused before any work
    store = ResultStore(spec.out, spec.storage_options)
    if seed_drawn:  # the seed its first run drew, kept in the manifest (a dry run draws one for its estimate)
        spec, _ = settled_seed(spec, store.read_manifest())
    grid_plan = plan_grid(spec, bank)
    plan = (selection or Selection()).keep(spec, grid_plan)  # this invocation's part of the grid
    # The store's first request (no credentials, no endpoint) is resume_plan's.
    state = resume_plan(plan, store, spec.max_unscored_attempts, retry_unscored)
    todo = state.todo
    summary = GridSummary(spec=spec, planned=len(plan), already_done=state.stored, already_final=state.final,
                          attempts=state.attempts, retry_unscored=retry_unscored)  # fmt: skip
    if len(plan) < len(grid_plan):
        summary.grid_planned = len(grid_plan)
        print(f"  selected {len(plan)} of the grid's {len(grid_plan)} trials (the rest stay pending)", file=sys.stderr)
    estimate = estimate_grid(spec, todo, model_prices, len(plan) - state.final)
    for line in estimate_lines(spec, estimate) + summary.plan_lines():
        print(line, file=sys.stderr)
    keyless = missing_keys(spec) if todo else []
    if dry_run:
        for line in keyless:
            print(f"  key: {line} (the run would refuse to start)", file=sys.stderr)
    if dry_run or not todo:
        summary.wall_s = time.monotonic() - started
        return summary
    refused = keyless or rejected_keys(spec)  # before Ray and before anything is written
    if refused:
        raise UsageError("; ".join(refused))
    gid = grid_id(spec, bank)
    run_id = gid[:22]
    stored = store.read_manifest()
    extending = stored is not None and stored.get("grid_id") != gid
    if extending:  # as write_manifest would refuse it, before Ray starts; unless --extend and it does
        assert stored is not None
        check_extension(stored, spec, bank, {p.trial_id for p in grid_plan}, extend=extend, url=store.url)
    summary.phases["plan_s"] = time.monotonic() - started
    attempt = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    check_free(store.objects)  # one writer per folder: a live holder is named before Ray starts
    # Ray before the lease and the manifest: a grid that cannot start (no cluster at --address) writes nothing.
    cluster = Ray(address)
    summary.phases["ray_start_s"] = time.monotonic() - started - summary.phases["plan_s"]
    try:
        if not cluster.started_here:  # a cluster's other nodes: do their actors see the keys too?
            nodes = node_keys(cluster.ray, spec)
            for line in nodes.unanswered:
                print(f"  key: {line}", file=sys.stderr)
            if nodes.missing:
                raise UsageError("; ".join(nodes.missing))
        lease = take_lease(store.objects, holder_name(attempt))
    except BaseException:
        cluster.close()
        raise
    try:
        # The output's secret canary key, made before any trial; every worker reads it from the store
        # (it never travels through Ray), and the manifest names its id only.
        spec, key = grid_canary_key(spec, store, stored)
        manifest = build_manifest(spec, bank, prices, len(grid_plan), seed_drawn=seed_drawn, canary_key=key)
        if extending and stored is not None:
            store.replace_manifest(extended_manifest(manifest, stored), stored)
        else:
            store.write_manifest(manifest)
        store.write_attempt(attempt, attempt_info(run_id, {"address": address}))
        # The grid's spend before this run: the budget's starting point, and the live line's.
        summary.on_record = spend_on_record(store)
        journal = _Checkpoints(store, attempt, summary.on_record) if spec.budget_usd else None
        summary.tally = _drive(cluster, spec, run_id, todo, model_prices, summary, progress, journal, lease)
    except KeyboardInterrupt:
        summary.interrupted = True  # what is stored stays; the summary says how to resume
    finally:
        stopping = time.monotonic()
        lease.release()
        cluster.close()
        if cluster.started_here:  # a private local Ray's shutdown, reported as its start-up is
            summary.phases["ray_stop_s"] = time.monotonic() - stopping
    if summary.interrupted:  # actors may have stored batches the driver never heard of: ask the store
        planned = {p.trial_id for p in plan}
        summary.stored_at_stop = len(planned & store.done_ids())
    elif summary.complete:  # before saying "stored": read back what the store holds for the plan
        planned_ids = {p.trial_id for p in plan}
        summary.verdict = verify_store(store, planned_ids, full=False, bound=spec.max_unscored_attempts)
    summary.wall_s = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary.driver_peak_rss_mb = usage.ru_maxrss / 1024
    summary.driver_cpu_s = usage.ru_utime + usage.ru_stime
    return summary


class _Checkpoints:
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


def _park(spec: GridSpec, queue: WorkQueue, summary: GridSummary, outcome: TrialOutcome) -> None:
    """The provider's account is out of quota or credit: its unsent trials stay pending for the next run
    (no retry would help, and each would fail the same way)."""
    provider = spec.models[outcome.model_index].provider
    if provider in summary.parked:
        return
    left = queue.remove(lambda p: spec.models[p.model_index].provider == provider)
    summary.parked[provider] = left
    print(f"[grid] provider {provider} parked: its account is out of quota or credit; {left} of its "
          "trials stay pending for the next run", file=sys.stderr, flush=True)  # fmt: skip


def _drive(cluster: Ray, spec: GridSpec, run_id: str, todo: list[PlannedTrial], model_prices: list[Any],
           summary: GridSummary, progress: bool, journal: _Checkpoints | None = None,
           lease: Lease | None = None) -> Tally:  # fmt: skip
    ray = cluster.ray
    began = time.monotonic()
    spent_before = summary.on_record.total_usd if summary.on_record else 0.0
    expected, guessed = expected_costs(spec, todo, model_prices) if spec.budget_usd else ({}, frozenset())
    actors, gates, ledger = _start_actors(ray, spec, run_id, cluster.cpus(), spent_before, guessed)
    pings = {a.ping.remote(): i for i, a in enumerate(actors)}
    # Wait for every actor, but not forever: one that cannot be placed (a node lost, its CPUs gone)
    # must not hang the run; it joins through the dispatcher's probes when it comes up.
    ready, _ = ray.wait(list(pings), num_returns=len(pings), timeout=STALL_S)
    if not ready:
        raise UsageError(f"no worker actor started within {STALL_S:.0f} s: is the cluster short of CPUs?")
    summary.phases["actors_s"] = time.monotonic() - began
    began = time.monotonic()
    calls = 2 if all(m.offline for m in spec.models) else spec.concurrency.trials_per_actor
    window = spec.concurrency.window or 2 * len(actors) * calls
    from cluster.actors import ACTOR_LOST

    store = ResultStore(spec.out, spec.storage_options)
    admit = None
    if ledger is not None:

        def admit(batch: list[PlannedTrial]) -> int:
            asked = []
            for p in batch:
                ref = parse_task_id(p.task_id)
                asked.append((p.trial_id, p.model_index, expected[(p.model_index, ref.kind, ref.length)]))
            return int(ray.get(ledger.admit.remote(asked)))

    dispatcher = Dispatcher(ray, actors, spec, calls, window, store, actor_lost=ACTOR_LOST, admit=admit)
    for ref, index in pings.items():
        if ref not in ready:
            dispatcher.live[index] = False
            dispatcher.probes[ref] = index
    queue, tally, admitting, last_stats = WorkQueue(todo, len(actors)), Tally(), True, 0.0
    tally.total, tally.on_record_usd, tally.cap_usd = len(todo), spent_before, spec.budget_usd
    summary.tally = tally  # kept on the summary as it runs: a Ctrl-C still reports what was stored
    cpu_before = time.process_time()
    idle_since = time.monotonic()
    with GridProgress(len(todo), enabled=progress) as display:
        while queue or dispatcher.in_flight:
            dispatcher.refused = False
            while admitting and dispatcher.submit(queue):
                pass
            if dispatcher.refused and not dispatcher.in_flight:
                admitting = False  # the next trial does not fit and nothing running can make room
            if not dispatcher.in_flight:
                if not admitting:
                    break  # budget closed and nothing running
                if dispatcher.any_live:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > STALL_S:
                    summary.stalled = True
                    break  # no actor came back: stop, resumable, rather than hang
            # During a ramp, wake for its next start rather than the usual half second.
            outcomes, requeued = dispatcher.collect(queue, min(0.5, dispatcher.ramp_wait_s(queue)) or 0.5)
            tally.requeued += requeued
            for outcome in outcomes:
                _tally(tally, outcome, summary)
                if outcome.fault == QUOTA_KIND:
                    _park(spec, queue, summary, outcome)
            if ledger is not None and outcomes:  # room the ended trials leave, and what they taught
                ended = [(o.trial_id, o.stored and not o.harness) for o in outcomes]
                admitting = bool(ray.get(ledger.finish.remote(ended))) and admitting
            if lease is not None and time.time() > lease.expires - TTL_S * 5 / 6:
                try:
                    lease.renew()
                except LeaseLost as lost:  # another driver holds the folder now: send nothing more
                    summary.lease_lost = str(lost)
                    admitting = False
                    queue.remove(lambda _: True)
            if journal is not None and ledger is not None and journal.due():
                state = ray.get(ledger.summary.remote())
                journal.write(state, tally.stored_usd)
                tally.ledger_usd = state["spent_usd"]
            if gates and time.monotonic() - last_stats > 2.0:
                last_stats = time.monotonic()
                stats = ray.get([g.stats.remote() for g in gates.values()])
                tally.gate_wait_s = sum(s["waited_s"] for s in stats)
                tally.rate_limited = sum(s["rate_limited"] for s in stats)
                tally.gate_rpm = {s["provider"]: s["rpm"] for s in stats if s.get("adaptive")}
            display.update(tally)
    summary.phases["trials_s"] = time.monotonic() - began
    summary.driver_trial_cpu_s = time.process_time() - cpu_before
    summary.not_started = len(queue)
    summary.abandoned = len(dispatcher.abandoned)
    summary.budget_reached = ledger is not None and not admitting
    if ledger is not None:
        summary.ledger = ray.get(ledger.summary.remote())
        if journal is not None:
            journal.write(summary.ledger, tally.stored_usd, wait=True)
    if gates:
        summary.gates = ray.get([g.stats.remote() for g in gates.values()])
    summary.workers = _worker_stats(ray, actors)
    return tally


def _worker_stats(ray: Any, actors: list[Any]) -> list[dict[str, Any]]:
    """Each live actor's CPU split (for the summary's worker line); a dead one is left out."""
    from ray.exceptions import ActorDiedError, ActorUnavailableError, GetTimeoutError, RayActorError

    found = []
    for ref in [a.stats.remote() for a in actors]:
        try:
            found.append(ray.get(ref, timeout=10))
        except (RayActorError, ActorDiedError, ActorUnavailableError, GetTimeoutError):
            continue
    return found


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
    selection = Selection.from_flags(args.models, args.tasks, args.epochs)
    summary = run_grid(spec, address=args.address, dry_run=args.dry_run, progress=not args.no_progress,
                       retry_unscored=args.retry_unscored, extend=args.extend, selection=selection)
    summary.resume = " ".join(filter(None, [f"apiflow grid run {args.grid} --out {spec.out}", selection.describe()]))
    for line in summary.lines(dry_run=args.dry_run, verbose=args.verbose):
        print(line)
    if summary.grid_planned is not None:
        print(f"  selection {selection.describe()}: {summary.planned} of the grid's {summary.grid_planned} trials; "
              f"`apiflow grid run {args.grid} --out {spec.out}` runs the rest")  # fmt: skip
    if summary.interrupted:
        return 130
    return 0 if args.dry_run or summary.complete else 3


def main(argv: list[str] | None = None) -> int:
    """``python -m cluster.driver`` entry point."""
    args = build_arg_parser().parse_args(argv)
    return one_line_errors(lambda: run_from_args(args), sys.argv[1:] if argv is None else argv, lambda: args)


if __name__ == "__main__":
    sys.exit(main())
