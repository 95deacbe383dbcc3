"""The batch tier on Ray: a ``tier: batch`` grid run by ``run_grid`` against the stand-in's batch APIs
(every call served and billed as batch, the workers' batch-tier counts in the summary), and a driver
SIGKILLed while its batches run at the stand-in, then resumed: nothing lost, no request paid twice.
The in-process checks (same trials as on the synchronous tier, half the price) are test_batch_tier.py's;
the figures at scale are bench/bench_batch.py's (docs/results/issue28-batch.md)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from clusterkit import ROOT, kill_ray_of

from apiflow.bank import DEFAULT_BANK
from apiflow.results.store import ResultStore
from apiflow.testing.standin_server import StandinConfig, StandinServer
from cluster.driver import run_grid
from cluster.spec import GridSpec, load_grid

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("litellm")

TASKS = ["sample-w01-sub01", "sample-w01-sub02", "sample-w01-chain-1to02", "sample-w01-chain-1to03"]
ANTHROPIC, OPENAI = "claude-sonnet-4-6", "gpt-5-mini"
PLAYS = ((ANTHROPIC, "apiflow/oracle"), (OPENAI, "apiflow/oracle"))


def grid(server: StandinServer, out: Path, wait_s: float, epochs: int = 1) -> dict[str, Any]:
    batching = {"size": 64, "wait_s": wait_s, "poll_s": wait_s, "deadline_s": 60}
    return {
        "name": "batch-ray", "bank": str(DEFAULT_BANK), "out": str(out), "epochs": epochs, "seed": 0,
        "tasks": {"ids": TASKS}, "price_table": str(ROOT / "configs/prices/2027-02.yaml"),
        "concurrency": {"actors": 1, "trials_per_actor": 16}, "preflight": "off", "canary_key": "none",
        "models": [
            {"model": f"anthropic/{ANTHROPIC}", "slug": ANTHROPIC, "tier": "batch", "max_tokens": 1024,
             "batching": batching, "params": {"api_base": server.root, "api_key": "sk-test"}},
            {"model": f"openai/{OPENAI}", "slug": OPENAI, "tier": "batch", "max_tokens": 1024,
             "batching": batching, "params": {"api_base": server.url, "api_key": "sk-test"}},
        ],
    }  # fmt: skip


def stored(out: Path) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """The stored rows, and each one's calls as served (``[model, fingerprint, request id, tier]``)."""
    store = ResultStore(str(out))
    rows = store.read_rows().to_pylist()
    served = [store.read_transcript(r["model"], r["trial_id"])["apiflow"].get("served") or [] for r in rows]
    return rows, served


def batch_counts(summary: Any) -> dict[str, int]:
    total: dict[str, int] = {}
    for worker in summary.workers:
        for key, value in worker["batch_tier"].items():
            total[key] = total.get(key, 0) + value
    return total


def running_and_ended(server: StandinServer) -> tuple[int, int]:
    book = server.provider.batches
    with book.lock:
        book.settle_all()
        running = sum(job.ended_at is None for job in book.jobs.values())
        return running, len(book.jobs) - running


def test_a_batch_tier_grid_on_ray_serves_and_bills_every_call_as_batch(ray_session, tmp_path):
    server = StandinServer(StandinConfig(plays=PLAYS, batch_latency_s=0.3))
    server.start()
    try:
        spec = GridSpec.model_validate(grid(server, tmp_path / "out", wait_s=0.1))
        summary = run_grid(spec, progress=False)
        server.provider.batches.settle_all()
        billed = server.provider.stats
    finally:
        server.stop()
    assert summary.complete and summary.planned == 2 * len(TASKS)
    rows, served = stored(tmp_path / "out")
    assert len(rows) == summary.planned and not any(r["harness"] for r in rows)
    calls = sum(r["model_calls"] for r in rows)
    assert [len(s) for s in served] == [r["model_calls"] for r in rows]
    assert {entry[3] for entry in sum(served, [])} == {"batch"}  # every call, both routes
    assert billed.batch.requests == billed.batch.answered == calls and billed.paid_twice == 0
    assert billed.sync.requests == 0  # nothing went synchronous
    counts = batch_counts(summary)  # TrialWorker.stats()["batch_tier"], through the summary
    assert counts["answered"] == counts["submitted"] == calls and counts["missed"] == 0
    assert 0 < counts["batches"] < calls  # concurrent trials' turns shared batches


def test_a_driver_killed_while_its_batches_run_resumes_without_paying_twice(ray_session, tmp_path):
    server = StandinServer(StandinConfig(plays=PLAYS, batch_latency_s=1.5))
    server.start()
    ray_dir = tempfile.mkdtemp(prefix="abt-", dir="/tmp")
    try:
        grid_file = tmp_path / "grid.yaml"
        grid_file.write_text(yaml.safe_dump(grid(server, tmp_path / "out", wait_s=0.2, epochs=2)))
        env = {**os.environ, "APIFLOW_RAY_TEMP_DIR": ray_dir}
        env.pop("RAY_ADDRESS", None)
        driver = subprocess.Popen(
            [sys.executable, "-m", "cluster.driver", str(grid_file), "--no-progress"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            # Kill once a batch has been answered (a replay re-reads it) and another is still running.
            while driver.poll() is None and time.monotonic() < deadline:
                running, ended = running_and_ended(server)
                if running and ended >= 2:
                    break
                time.sleep(0.05)
            assert driver.poll() is None, "the driver finished before it could be killed"
            assert running_and_ended(server)[0] > 0
            os.killpg(driver.pid, signal.SIGKILL)  # the driver and its process group
            driver.wait()
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait()
            kill_ray_of(ray_dir)  # the private Ray it started, workers included
        planned = 2 * 2 * len(TASKS)
        assert len(ResultStore(str(tmp_path / "out")).done_ids()) < planned
        summary = run_grid(load_grid(grid_file), progress=False)  # the same grid, resumed
        server.provider.batches.settle_all()
        billed = server.provider.stats
    finally:
        server.stop()
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert summary.complete and summary.planned == planned
    rows, served = stored(tmp_path / "out")
    assert len(rows) == planned and not any(r["harness"] for r in rows)
    assert {entry[3] for entry in sum(served, [])} == {"batch"}
    counts = batch_counts(summary)
    assert counts["from_journal"] + counts["reattached"] > 0  # the killed run's batches, found again
    assert counts["missed"] == 0
    # Every call of every stored trial was billed exactly once, whichever run sent it.
    assert billed.paid_twice == 0 and billed.sync.requests == 0
    assert billed.batch.requests == billed.batch.answered == sum(r["model_calls"] for r in rows)
