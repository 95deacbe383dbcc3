"""Grid-runner benchmarks (issue 4). One command; ``--parts`` picks what to run (default: all).

    .venv/bin/python bench/bench_grid.py [--parts a,b,c,d,e] [--work DIR] [--epochs 5] [--batch 64]

a  Demo grid (offline models, sample bank) on a private 2-CPU Ray vs the same trials run in one
   process without Ray (same TrialRunner, same store writes). Reports trials/s of the trial phase
   (after Ray and the actors are up), and end to end with Ray start-up; overhead ratio = in-process
   trials/s / Ray trials/s.
b  Stand-in provider (real HTTP, real litellm, the gate actor and retry layer) with a fixed RPM
   and TPM: achieved request rate as a fraction of the limit (server-side timestamps of answered
   requests, steady state) and the share of calls answered 429. Targets: >= 95 %, < 1 %.
c  Peak driver memory (ru_maxrss of a fresh driver process) for a planned grid of 44,365 trials vs
   one of 4,437: import Ray, plan, list the store, build the work queue. Target < 500 MB, flat.
d  The full-size offline grid (issue 11 §2): the 19 calibrated sims ``apiflow/sim:calibrated-<slug>``
   x the 467 ``bank/v1`` tasks x 5 epochs = 44,365 trials, end to end (``python -m cluster.driver``:
   Ray start, grading, rows in batch objects + one transcript per trial). Target <= 40 s wall, Ray
   start-up reported apart. Baseline in the same run: every 20th task's trials of the same plan (all
   sims and epochs, in plan order, the heap settled as an actor settles it) run in this process
   without Ray (same TrialRunner, same store): ideal trial phase = trials x in-process seconds per
   trial / cores; the ratio says what the grid adds on top of the trials themselves.
e  The store's own cost per trial, per-trial layout (one-row Parquet + transcript, today's layout for
   provider trials and the only one before batches) against batched rows (one object per 64
   trials + one transcript archive), over the same 1,000 played bank/v1 trials: CPU ms per trial, ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apiflow.bank import DEFAULT_BANK  # noqa: E402
from apiflow.models import OFFLINE_MODELS  # noqa: E402

PRICES = str(ROOT / "configs/prices/2026-12.yaml")


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _grid(out: str, **changes: object) -> dict:
    data = {"name": "bench", "bank": str(DEFAULT_BANK), "models": [{"model": m} for m in OFFLINE_MODELS],
            "epochs": 3, "out": out, "price_table": PRICES, "concurrency": {"batch": 16}}  # fmt: skip
    data.update(changes)
    return data


def part_a(work: Path) -> None:
    from cluster.driver import absolute_paths, run_grid
    from cluster.plan import plan_grid
    from cluster.spec import GridSpec
    from cluster.worker import TrialRunner, load_checked_bank

    spec = absolute_paths(GridSpec.model_validate(_grid(str(work / "a-inproc"))))
    plan = plan_grid(spec, load_checked_bank(spec))
    runner = TrialRunner(spec, "bench")
    warm = TrialRunner(spec.with_overrides(out=str(work / "a-warmup")), "bench")
    asyncio.run(
        warm.run_batch(plan[:20])
    )  # first-use imports and caches, as an actor's first batch pays them
    began = time.perf_counter()
    outcomes = asyncio.run(runner.run_batch(plan))
    inproc_s = time.perf_counter() - began
    assert sum(o.stored for o in outcomes) == len(plan)
    ray_spec = spec.with_overrides(out=str(work / "a-ray"))
    summary = run_grid(ray_spec, progress=False)
    assert summary.complete
    trials_s = summary.phases["trials_s"]
    n = len(plan)
    print(f"(a) demo grid, {n} offline trials (7 models x 13 tasks x 3 epochs), load avg {_load()}")
    print(f"    one process, no Ray : {inproc_s:6.2f} s  {n / inproc_s:7.1f} trials/s")
    print(
        f"    Ray, 2 actors       : {trials_s:6.2f} s  {n / trials_s:7.1f} trials/s (trial phase, actors' warm-up included)"
    )
    print(f"    Ray end to end      : {summary.wall_s:6.2f} s  (Ray start {summary.phases['ray_start_s']:.1f} s, "
          f"actors {summary.phases['actors_s']:.1f} s)")  # fmt: skip
    print(f"    overhead ratio (in-process / Ray trials/s): {(n / inproc_s) / (n / trials_s):.2f}")


def part_b(work: Path, rpm: float, tpm: float) -> None:
    from apiflow.testing.standin_server import StandinConfig, StandinServer
    from cluster.driver import run_grid
    from cluster.spec import GridSpec

    server = StandinServer(StandinConfig(rpm=rpm, tpm=tpm, burst_s=1.0))
    url = server.start()
    try:
        spec = GridSpec.model_validate(_grid(
            str(work / "b"),
            models=[{"model": "openai/apiflow/oracle", "slug": "standin-oracle",
                     "params": {"api_base": url, "api_key": "sk-standin", "timeout": 30}}],
            epochs=4, ratelimits={"openai": {"rpm": rpm, "tpm": tpm, "burst_s": 1.0}},
            concurrency={"actors": 1, "trials_per_actor": 24},
            price_table=str(_standin_prices(work)),
        ))  # fmt: skip
        summary = run_grid(spec, progress=False)
    finally:
        server.stop()
    stats = server.provider.stats
    times = sorted(stats.answered_at)
    # Steady state: drop the first second (the full bucket's burst) and measure to the last answer.
    steady = [t for t in times if t >= times[0] + 1.0]
    rate = (len(steady) - 1) / (steady[-1] - steady[0]) if len(steady) > 1 else 0.0
    limit = rpm / 60.0
    print(
        f"(b) stand-in provider at {rpm:.0f} RPM / {tpm:.0f} TPM, {summary.tally.done} trials via litellm, load avg {_load()}"
    )
    print(f"    requests {stats.requests}, answered {stats.answered}, 429s {stats.rate_limited} "
          f"({stats.rate_limited / max(1, stats.requests):.2%} of calls)")  # fmt: skip
    print(
        f"    achieved {rate:.2f} req/s over {steady[-1] - steady[0]:.1f} s steady state = {rate / limit:.1%} of the limit"
    )
    print(f"    gate: {summary.gates}")


def _standin_prices(work: Path) -> Path:
    table = yaml.safe_load(Path(PRICES).read_text())
    table["models"]["openai/apiflow/*"] = dict(table["models"]["apiflow/*"])
    path = work / "standin-prices.yaml"
    path.write_text(json.dumps(table))
    return path


_PLAN_ONLY = """
import resource, sys, json
from collections import deque
import ray  # the driver imports Ray
from cluster.driver import absolute_paths
from cluster.plan import plan_grid, remaining
from cluster.spec import GridSpec
from cluster.worker import load_checked_bank
from apiflow.results.store import ResultStore
spec = absolute_paths(GridSpec.model_validate(json.loads(sys.argv[1])))
plan = plan_grid(spec, load_checked_bank(spec))
queue = deque(remaining(plan, ResultStore(spec.out).done_ids()))
print(len(queue), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def _full_grid(out: str, count: int = 467, epochs: int = 5) -> dict:
    models = [
        {"model": OFFLINE_MODELS[i % len(OFFLINE_MODELS)], "slug": f"offline-{i + 1:02d}"} for i in range(19)
    ]
    return _grid(out, models=models, tasks={"count": count}, epochs=epochs, concurrency={"batch": 32})


def part_c(work: Path) -> None:
    print(f"(c) peak driver memory (fresh process: import ray, plan, list store, queue), load avg {_load()}")
    for count in (47, 467):
        grid = _full_grid(str(work / f"c-{count}"), count=count)
        out = subprocess.run([sys.executable, "-c", _PLAN_ONLY, json.dumps(grid)], capture_output=True, text=True,
                             check=True, cwd=ROOT)  # fmt: skip
        trials, rss = out.stdout.split()
        print(f"    {int(trials):6d} planned trials: peak RSS {float(rss):6.1f} MB")


def _calibrated_grid(out: str, epochs: int = 5, batch: int = 64, n_models: int = 19) -> dict:
    from apiflow.models.calibrated import CALIBRATED_PANEL

    models = [{"model": m} for m in CALIBRATED_PANEL[:n_models]]
    return _grid(out, bank=str(ROOT / "bank/v1"), models=models, epochs=epochs, concurrency={"batch": batch})


def _inprocess(spec_data: dict, trials: list, batch: bool = True) -> tuple[float, float]:
    """``(cpu s, wall s)`` of running ``trials`` in this process (after a warm-up on other trials)."""
    from cluster.driver import absolute_paths
    from cluster.spec import GridSpec
    from cluster.worker import TrialRunner

    spec = absolute_paths(GridSpec.model_validate(spec_data))
    runner = TrialRunner(spec, "bench")
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(runner.run_batch(trials))
    return time.process_time() - cpu, time.perf_counter() - wall


def _bank_load_cpu(cache: str) -> float:
    """CPU seconds of ``load_checked_bank`` for bank/v1 in a fresh process (``cache``: the
    ``APIFLOW_BANK_CACHE`` value, ``off`` to parse)."""
    code = (
        "import time; from apiflow.bank import load_bank; t = time.process_time(); "
        f"load_bank({str(ROOT / 'bank/v1')!r}, cache=True); print(time.process_time() - t)"
    )
    env = {**os.environ, "APIFLOW_BANK_CACHE": cache} if cache else dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    return float(done.stdout.split()[-1])


def part_d(work: Path, epochs: int = 5, batch: int = 64, n_models: int = 19) -> None:
    from cluster.driver import absolute_paths
    from cluster.plan import plan_grid
    from cluster.spec import GridSpec
    from cluster.worker import load_checked_bank, settle_heap

    out = work / "d-grid"
    grid = _calibrated_grid(str(out), epochs, batch, n_models)
    parse_s = _bank_load_cpu("off")
    _bank_load_cpu("")  # fills the cache (a hit already when an earlier run or grid filled it)
    cached_s = _bank_load_cpu("")
    plan = plan_grid(
        absolute_paths(GridSpec.model_validate(grid)), load_checked_bank(GridSpec.model_validate(grid))
    )
    # The baseline plays what one actor plays, at a twentieth of the size: every 20th task with all
    # of its trials (every sim, every epoch) in plan order, so each task's first-sight work (its
    # script, literals, compiled routes) is spread over as many trials as in the grid; and with the
    # heap settled as each actor settles its own (cluster.worker.settle_heap). A sample of every
    # 20th trial instead met most tasks cold and the collector unsettled: 4.6 ms a trial against
    # the actors' 2.8 (round four), an ideal that flattered the grid.
    tasks = list(dict.fromkeys(p.task_id for p in plan))
    chosen = set(tasks[::20])
    sample = [p for p in plan if p.task_id in chosen]
    warm = [p for p in plan[1::97] if p.task_id not in chosen][:200]
    _inprocess(_calibrated_grid(str(work / "d-warm"), epochs, batch), warm)  # imports, caches
    settle_heap(GridSpec.model_validate(grid))
    cpu_s, inproc_s = _inprocess(_calibrated_grid(str(work / "d-inproc"), epochs, batch, n_models), sample)
    per_trial = inproc_s / len(sample)
    grid_file = work / "full-grid.yaml"
    grid_file.write_text(yaml.safe_dump(grid))
    load_before = _load()
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cluster.driver", str(grid_file), "--no-progress", "--verbose"],
                          capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    wall = time.perf_counter() - began
    print(f"(d) offline grid: {n_models} calibrated sims x {len(plan) // (n_models * epochs)} bank/v1 tasks x {epochs} epochs "
          f"= {len(plan)} trials, batch {batch}; load avg before {load_before}, after {_load()}")  # fmt: skip
    for line in done.stdout.splitlines():
        print(f"    {line.strip()}")
    if done.returncode != 0:
        print(done.stderr[-2000:])
    from apiflow.results.store import ResultStore

    store = ResultStore(str(out))
    ids = store.row_ids()
    phases = dict(re.findall(r"(\w+) ([\d.]+)s", done.stdout.split("time:", 1)[-1].split(";")[0]))
    trials_s = float(phases.get("trials", "nan"))
    cores = os.cpu_count() or 2
    ideal = len(plan) * per_trial / cores
    print(f"    baseline: {len(sample)} of these trials in one process, no Ray: {per_trial * 1000:.2f} ms/trial wall, "
          f"{cpu_s / len(sample) * 1000:.2f} ms/trial CPU")  # fmt: skip
    print(f"    wall {wall:.1f} s end to end (target <= 40 s), of which Ray start {phases.get('ray_start', '?')} s, "
          f"actors {phases.get('actors', '?')} s, trial phase {trials_s:.1f} s; {len(plan) / wall:.0f} trials/s")  # fmt: skip
    ray_start = float(phases.get("ray_start", "nan"))
    print(f"    wall without Ray start-up: {wall - ray_start:.1f} s "
          f"(of which the private Ray's shutdown {phases.get('ray_stop', '?')} s)")  # fmt: skip
    print(f"    rows stored {len(set(ids))} distinct / {len(ids)} physical (planned {len(plan)}); "
          f"row objects {sum(1 for _ in store.objects.list('rows', ('.parquet', '.arrow')))}")  # fmt: skip
    print(f"    trial phase / ideal ({len(plan)} x in-process s/trial / {cores} cores = {ideal:.1f} s): "
          f"{trials_s / ideal:.2f}")  # fmt: skip
    sizes = [p.stat().st_size for p in out.rglob("*") if p.is_file()]
    print(f"    store: {len(sizes)} files, {sum(sizes) / 1e6:.1f} MB")
    print(f"    bank/v1 load in a fresh process: parsed {parse_s:.2f} s CPU, from the parsed-bank cache "
          f"{cached_s:.2f} s CPU (driver and every actor load it)")  # fmt: skip


def part_e(work: Path) -> None:
    from apiflow.results.store import ResultStore
    from cluster.driver import absolute_paths
    from cluster.plan import plan_grid
    from cluster.spec import GridSpec
    from cluster.worker import TrialRunner, load_checked_bank

    spec = absolute_paths(GridSpec.model_validate(_calibrated_grid(str(work / "e-play"), epochs=1)))
    plan = plan_grid(spec, load_checked_bank(spec))[:1000]
    runner = TrialRunner(spec, "bench")

    async def play() -> list:
        return [await runner._play(p) for p in plan]

    played = asyncio.run(play())
    rounds = []
    for round_ in range(3):
        single = ResultStore(str(work / f"e-single-{round_}"))
        batched = ResultStore(str(work / f"e-batched-{round_}"))
        began = time.process_time()
        for record, row in played:
            single.put_trial(record, row)
        single_s = time.process_time() - began
        began = time.process_time()
        for start in range(0, len(played), 64):
            chunk = played[start : start + 64]
            batched.put_batch([r.apiflow.trial_id for r, _ in chunk], chunk)
        rounds.append((single_s, time.process_time() - began))
    single_s, batched_s = sorted(rounds)[1]  # the median round (sorted by the per-trial figure)
    n = len(played)
    print(
        f"(e) store cost per trial over {n} played bank/v1 trials (CPU, median of 3 rounds), load avg {_load()}"
    )
    print(f"    per-trial layout (one-row Parquet + transcript): {single_s / n * 1000:.3f} ms/trial")
    print(f"    batched (64 rows + 64 transcripts per 2 objects): {batched_s / n * 1000:.3f} ms/trial")
    print(f"    ratio per-trial / batched: {single_s / batched_s:.1f}x "
          f"(spread per-trial {min(r[0] for r in rounds) / n * 1000:.3f}-{max(r[0] for r in rounds) / n * 1000:.3f} ms)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="a,b,c,d,e")
    parser.add_argument("--work", help="scratch folder (default: a fresh temp dir, removed after)")
    parser.add_argument("--rpm", type=float, default=600.0)
    parser.add_argument("--tpm", type=float, default=3_000_000.0)
    parser.add_argument("--epochs", type=int, default=5, help="part d: epochs (5 = the 44,365-trial grid)")
    parser.add_argument(
        "--batch", type=int, default=64, help="part d: trials per actor call and per row object"
    )
    parser.add_argument(
        "--models", type=int, default=19, help="part d: the first N calibrated sims (19 = the full grid)"
    )
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-grid-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        parts = set(args.parts.split(","))
        if "c" in parts:
            part_c(work)
        if "a" in parts:
            part_a(work)
        if "b" in parts:
            part_b(work, args.rpm, args.tpm)
        if "e" in parts:
            part_e(work)
        if "d" in parts:
            part_d(work, args.epochs, args.batch, args.models)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
