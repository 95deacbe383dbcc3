"""Grid-runner benchmarks (issue 4). One command; ``--parts`` picks what to run (default: all).

    .venv/bin/python bench/bench_grid.py [--parts a,b,c,d] [--work DIR]

a  Demo grid (offline models, sample bank) on a private 2-CPU Ray vs the same trials run in one
   process without Ray (same TrialRunner, same store writes). Reports trials/s of the trial phase
   (after Ray and the actors are up), and end to end with Ray start-up; overhead ratio = in-process
   trials/s / Ray trials/s.
b  Stand-in provider (real HTTP, real litellm, the gate actor and retry layer) with a fixed RPM
   and TPM: achieved request rate as a fraction of the limit (server-side timestamps of answered
   requests, steady state) and the share of calls answered 429. Targets: >= 95 %, < 1 %.
c  Peak driver memory (ru_maxrss of a fresh driver process) for a planned grid of 44,365 trials vs
   one of 4,437: import Ray, plan, list the store, build the work queue. Target < 500 MB, flat.
d  The full-size offline grid (``--row-format parquet|arrow|both``, default parquet): 19 offline model slugs x 467 task slots (sample-bank tasks cycled with
   new seeds) x 5 epochs = 44,365 trials, end to end (``python -m cluster.driver``: Ray start, grading,
   one stored row + transcript per trial). Target <= 120 s wall on this 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
    from apiflow.models.standin_server import StandinConfig, StandinServer
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


def part_d(work: Path, row_format: str = "parquet") -> None:
    out = work / f"d-{row_format}"
    grid_file = work / f"full-grid-{row_format}.yaml"
    grid_file.write_text(yaml.safe_dump({**_full_grid(str(out)), "row_format": row_format}))
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cluster.driver", str(grid_file), "--no-progress"],
                          capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    wall = time.perf_counter() - began
    print(f"(d) full-size offline grid 19 x 467 x 5, {row_format} rows, python -m cluster.driver end to end, "
          f"load avg {_load()}")  # fmt: skip
    for line in done.stdout.splitlines():
        print(f"    {line.strip()}")
    if done.returncode != 0:
        print(done.stderr[-2000:])
    from apiflow.results.store import ResultStore

    stored = len(ResultStore(str(out)).done_ids())
    print(
        f"    wall {wall:.1f} s (target <= 120 s); rows stored {stored}; {stored / wall:.0f} trials/s end to end"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="a,b,c,d")
    parser.add_argument("--work", help="scratch folder (default: a fresh temp dir, removed after)")
    parser.add_argument("--rpm", type=float, default=600.0)
    parser.add_argument("--tpm", type=float, default=3_000_000.0)
    parser.add_argument("--row-format", default="parquet", help="part d: parquet, arrow or both")
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
        if "d" in parts:
            for row_format in ("parquet", "arrow") if args.row_format == "both" else (args.row_format,):
                part_d(work, row_format)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
