"""The grid driver: plan, skip what is stored, start the actors, drive them, summarise.

Run it as ``python -m cluster.driver GRID.yaml [--out URL] [--address auto|URL] [--budget-usd X]
[--dry-run]`` — also the entrypoint of ``ray job submit --working-dir . -- python -m
cluster.driver GRID.yaml`` and of ``apiflow grid run``. Scheduling is at-least-once (a batch
whose actor died is re-queued); storage is exactly-once (create-only rows), so a rerun of an
interrupted grid completes it with no duplicate and no lost trial. The loop that feeds the actors
is ``cluster.fleet``'s; a grid with a question runs it in waves (``cluster.waves``, docs/design/051).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apiflow.analysis.adaptive_section import RECORD_KEY
from apiflow.cli.grid import add_run_flags
from apiflow.errors import UsageError, one_line_errors
from apiflow.results.lease import Lease, check_free, holder_name, take_lease
from apiflow.results.prices import load_price_table
from apiflow.results.storage import check_output
from apiflow.results.store import ResultStore
from cluster.budget import spend_on_record
from cluster.estimate import estimate_grid, estimate_lines, expected_costs
from cluster.extend import check_extension, extended_manifest
from cluster.fleet import Checkpoints, Fleet, tally_outcome
from cluster.manifest import attempt_info, build_manifest, grid_canary_key, grid_id, settled_seed
from cluster.plan import PlannedTrial, plan_grid, resume_plan
from cluster.preflight import missing_keys, node_keys, rejected_keys
from cluster.progress import Tally
from cluster.report import GridSummary
from cluster.selection import Selection
from cluster.session import Ray
from cluster.spec import GridSpec, load_grid
from cluster.verify import verify_store
from cluster.waves import Sweep, question_override, read_store, sweep_plan
from cluster.worker import load_checked_bank, price_for

_tally = tally_outcome  # the name tests/cluster/test_unscored_final.py imports it by


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
    """Run (or resume) a grid until every planned trial is stored, the budget is reached, or it fails;
    a grid with a question until its sweep stops (answered, cap or exhausted: ``cluster.waves``).

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
    if spec.question is not None and len(plan) < len(grid_plan):
        raise UsageError("a question's sweep runs the whole grid's order: drop --models/--tasks/--epochs")
    # The store's first request (no credentials, no endpoint) is resume_plan's.
    state = resume_plan(plan, store, spec.max_unscored_attempts, retry_unscored)
    todo = state.todo
    summary = GridSummary(spec=spec, planned=len(plan), already_done=state.stored, already_final=state.final,
                          attempts=state.attempts, retry_unscored=retry_unscored)  # fmt: skip
    if len(plan) < len(grid_plan):
        summary.grid_planned = len(grid_plan)
        print(f"  selected {len(plan)} of the grid's {len(grid_plan)} trials (the rest stay pending)", file=sys.stderr)
    estimate = estimate_grid(spec, todo, model_prices, len(plan) - state.final)
    sweep = None
    if spec.question is not None:  # an adaptive sweep (docs/design/051): where the store leaves it
        bound = spec.max_unscored_attempts
        sweep = Sweep(sweep_plan(spec, grid_plan, expected_costs(spec, grid_plan, model_prices)[0]),
                      lambda: read_store(store, bound), bound, retry_unscored)  # fmt: skip
        sweep.start()
        summary.sweep = sweep.record()
    for line in estimate_lines(spec, estimate) + summary.plan_lines() + (sweep.plan.lines() if sweep else []):
        print(line, file=sys.stderr)
    keyless = missing_keys(spec) if todo else []
    if dry_run:
        for line in keyless:
            print(f"  key: {line} (the run would refuse to start)", file=sys.stderr)
    if dry_run or not todo or (sweep is not None and sweep.stop):
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
        info = attempt_info(run_id, {"address": address})
        store.write_attempt(attempt, info)
        if sweep is not None:  # the sweep's record, rewritten after each wave
            sweep.write = lambda record: store.write_attempt(attempt, {**info, RECORD_KEY: record})
        # The grid's spend before this run: the budget's starting point, and the live line's.
        summary.on_record = spend_on_record(store)
        journal = Checkpoints(store, attempt, summary.on_record) if spec.budget_usd else None
        summary.tally = _drive(cluster, spec, run_id, todo, model_prices, summary, progress, journal, lease, sweep)
    except KeyboardInterrupt:
        summary.interrupted = True  # what is stored stays; the summary says how to resume
    finally:
        summary.sweep = sweep.record() if sweep is not None else None
        stopping = time.monotonic()
        lease.release()
        cluster.close()
        if cluster.started_here:  # a private local Ray's shutdown, reported as its start-up is
            summary.phases["ray_stop_s"] = time.monotonic() - stopping
    if summary.interrupted:  # actors may have stored batches the driver never heard of: ask the store
        planned = {p.trial_id for p in plan}
        summary.stored_at_stop = len(planned & store.done_ids())
    elif summary.complete:  # before saying "stored": read back what the store holds for the plan
        planned_ids = sweep.plan.prefix_ids(sweep.counts) if sweep is not None else {p.trial_id for p in plan}
        summary.verdict = verify_store(store, planned_ids, full=False, bound=spec.max_unscored_attempts)
    summary.wall_s = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary.driver_peak_rss_mb = usage.ru_maxrss / 1024
    summary.driver_cpu_s = usage.ru_utime + usage.ru_stime
    return summary


def _drive(cluster: Ray, spec: GridSpec, run_id: str, todo: list[PlannedTrial], model_prices: list[Any],
           summary: GridSummary, progress: bool, journal: Checkpoints | None = None,
           lease: Lease | None = None, sweep: Sweep | None = None) -> Tally:  # fmt: skip
    """Start the actors once, drive ``todo`` through them (``cluster.fleet``), or the sweep's waves
    (``cluster.waves``), and collect their stats."""
    ray = cluster.ray
    began = time.monotonic()
    spent_before = summary.on_record.total_usd if summary.on_record else 0.0
    priced = todo if sweep is None else [t for row in sweep.plan.trials for t in row]  # whatever a wave sends
    expected, guessed = expected_costs(spec, priced, model_prices) if spec.budget_usd else ({}, frozenset())
    actors, gates, ledger = _start_actors(ray, spec, run_id, cluster.cpus(), spent_before, guessed)
    fleet = Fleet(ray, spec, summary, actors, gates, ledger, expected=expected, total=len(todo), progress=progress,
                  journal=journal, lease=lease)  # fmt: skip
    fleet.wait_ready(began)
    with fleet.live():
        if sweep is not None:
            sweep.run(fleet)
        else:
            fleet.run(todo)
    tally = fleet.finish()
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
    spec = question_override(spec.with_overrides(out=args.out, budget_usd=args.budget_usd), args.question, args.level,
                             args.step, args.each)  # fmt: skip
    selection = Selection.from_flags(args.models, args.tasks, args.epochs)
    summary = run_grid(spec, address=args.address, dry_run=args.dry_run, progress=not args.no_progress,
                       retry_unscored=args.retry_unscored, extend=args.extend, selection=selection)
    asked = [f"--question {args.question}" if args.question else "", "" if args.level is None else f"--level {args.level:g}",
             "" if args.step is None else f"--step {args.step:g}", "--each" if args.each else ""]  # fmt: skip
    summary.resume = " ".join(filter(None, [f"apiflow grid run {args.grid} --out {spec.out}", selection.describe(), *asked]))
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
