"""Growth of planning and resume with the grid's size (issue 11 §5). One command:

    .venv/bin/python bench/bench_growth.py [--sizes 44365,443650] [--no-s3] [--work DIR]

Grids: the 19 calibrated sims x the 467 ``bank/v1`` tasks x 5 epochs (44,365 trials) and the same
x 50 epochs (443,650, the 10x grid). For each size, nearly every planned trial (all but the last 1 %
of the run order) is *stored synthetically*: no trial runs; their rows are built from one real
played row with the planned trial id and model, and written as batch objects of 64 rows with the
real store code (``ResultStore.batch_path`` + ``rows_bytes``; ``create_only`` locally, a bulk
concurrent upload to S3). Transcripts are not written: resume never reads them.

Then a fresh process does what a driver does before its first trial on resume, timing each step:
import Ray, load the bank (the same at every size, reported apart), plan (trial ids + run order), list the done ids (``ResultStore.done_ids``: a listing
plus the ids column of each batch object), subtract, build the queue; and reports its peak RSS.
Locally and on S3 (a ``moto_server`` subprocess on 127.0.0.1). The baseline is the 1x grid in the
same run: the printed ratio 10x / 1x is 10 for linear growth. Targets: every ratio <= ~10, driver
peak RSS < 1 GB at 443,650.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PRICES = str(ROOT / "configs/prices/2026-12.yaml")
BATCH = 64
EPOCHS_1X = 5

_RESUME = """
import json, resource, sys, time
from collections import deque
t0 = time.perf_counter()
import ray  # noqa: F401  (the driver imports Ray)
from apiflow.results.store import ResultStore
from cluster.driver import absolute_paths
from cluster.plan import plan_grid, remaining
from cluster.spec import GridSpec
from cluster.worker import load_checked_bank
t1 = time.perf_counter()
spec = absolute_paths(GridSpec.model_validate(json.loads(sys.argv[1])))
bank = load_checked_bank(spec)
t1b = time.perf_counter()
plan = plan_grid(spec, bank)
t2 = time.perf_counter()
done = ResultStore(spec.out, spec.storage_options).done_ids()
t3 = time.perf_counter()
queue = deque(remaining(plan, done))
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "bank_s": t1b - t1, "plan_s": t2 - t1b, "list_s": t3 - t2, "remaining_s": t4 - t3,
                  "planned": len(plan), "done": len(done), "todo": len(queue),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def grid(out: str, epochs: int, storage_options: dict | None = None) -> dict:
    """The calibrated-panel grid on bank/v1 with ``epochs`` epochs."""
    from apiflow.models.calibrated import CALIBRATED_PANEL

    return {"name": "growth", "bank": str(ROOT / "bank/v1"), "models": [{"model": m} for m in CALIBRATED_PANEL],
            "epochs": epochs, "out": out, "price_table": PRICES, "concurrency": {"batch": BATCH},
            "storage_options": storage_options or {}}  # fmt: skip


def template_row() -> dict:
    """One real row (an oracle trial on the sample bank), the pattern of every synthetic row."""
    from apiflow.agent import TrialSpec, trial_seed
    from apiflow.bank import DEFAULT_BANK, load_bank
    from apiflow.models import make_model
    from apiflow.results.rows import record_to_row
    from apiflow.runner import play_trial_sync

    bank = load_bank(DEFAULT_BANK)
    task = next(iter(bank.tasks.values()))
    model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
    record = play_trial_sync(
        TrialSpec(
            task=task, world=bank.world_of(task), seed=0, epoch=1, run_id="growth", bank_name=bank.name,
            bank_hash=bank.hash, model_slug="apiflow-oracle",
        ),
        model,
    )
    return record_to_row(record, panel="growth", price_table="growth")


def store_synthetic(data: dict, row: dict) -> tuple[int, int, float]:
    """Store all but the last 1 % of the grid's planned trials as batch objects; ``(trials, objects, s)``."""
    from apiflow.results.rowfiles import rows_bytes
    from apiflow.results.store import ResultStore
    from cluster.driver import absolute_paths
    from cluster.plan import plan_grid
    from cluster.spec import GridSpec
    from cluster.worker import load_checked_bank

    spec = absolute_paths(GridSpec.model_validate(data))
    plan = plan_grid(spec, load_checked_bank(spec))
    stored = plan[: len(plan) * 99 // 100]
    store = ResultStore(spec.out, spec.storage_options)
    slugs = [m.slug for m in spec.models]
    began = time.perf_counter()
    pending: dict[str, bytes] = {}
    objects = 0
    for start in range(0, len(stored), BATCH):
        batch = stored[start : start + BATCH]
        rows = [{**row, "trial_id": p.trial_id, "model": slugs[p.model_index], "task_id": p.task_id,
                 "epoch": p.epoch, "trial": p.epoch, "seed": p.seed} for p in batch]  # fmt: skip
        path, body = store.batch_path([p.trial_id for p in batch]), rows_bytes(rows)
        objects += 1
        if store.local:
            store.create_only(path, body)
        else:
            pending[path] = body
            if len(pending) >= 256:
                store.fs.pipe(pending)
                pending = {}
    if pending:
        store.fs.pipe(pending)
    return len(stored), objects, time.perf_counter() - began


def resume(data: dict) -> dict:
    """The driver's resume start-up in a fresh process (see ``_RESUME``)."""
    done = subprocess.run([sys.executable, "-c", _RESUME, json.dumps(data)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="5,50", help="epochs of each grid (5 = 44,365 trials, 50 = 443,650)"
    )
    parser.add_argument("--no-s3", action="store_true", help="local folder only")
    parser.add_argument("--work", help="scratch folder (default: a fresh temp dir, removed after)")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-growth-"))
    work.mkdir(parents=True, exist_ok=True)
    sizes = [int(e) for e in args.sizes.split(",")]
    row = template_row()
    moto = None
    results: dict[tuple[str, int], dict] = {}
    try:
        places = [("local", None)]
        if not args.no_s3:
            from cluster.chaos.kit import MotoS3

            moto = MotoS3()
            moto.start()
            places.append(("s3", moto.bucket("growth")))
        for place, options in places:
            for epochs in sizes:
                out = str(work / f"{place}-{epochs}") if options is None else f"s3://growth/e{epochs}"
                data = grid(out, epochs, options)
                trials, objects, write_s = store_synthetic(data, row)
                figures = resume(data)
                figures.update(stored=trials, objects=objects, write_s=write_s)
                results[(place, epochs)] = figures
                print(f"{place:5s} {figures['planned']:7d} planned, {trials:7d} stored in {objects:5d} batch "
                      f"objects (written in {write_s:5.1f} s): bank load {figures['bank_s']:5.2f} s, plan {figures['plan_s']:6.2f} s, "
                      f"done-id listing "
                      f"{figures['list_s']:6.2f} s, remaining {figures['remaining_s']:5.2f} s, "
                      f"{figures['todo']} to run; driver peak RSS {figures['rss_mb']:6.1f} MB; load avg {_load()}",
                      flush=True)  # fmt: skip
    finally:
        if moto is not None:
            moto.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    if len(sizes) == 2:
        small, big = sizes
        print(f"growth {big // small}x grid / 1x grid (linear = {big / small:.0f}):")
        for place in sorted({p for p, _ in results}):
            a, b = results[(place, small)], results[(place, big)]
            for f in (a, b):  # what a resume waits for before its first trial (bank load aside)
                f["resume_s"] = f["plan_s"] + f["list_s"] + f["remaining_s"]
            keys = ("plan_s", "list_s", "resume_s", "rss_mb")
            ratios = ", ".join(f"{k.rsplit('_', 1)[0]} {b[k] / a[k]:.1f}" for k in keys)
            print(f"    {place}: {ratios}; peak RSS at {b['planned']:,} planned: {b['rss_mb']:.0f} MB "
                  f"(target < 1024 MB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
