"""Where the chaos suite's scenarios play (``Stage``): one two-node cluster and one S3 server, the grids
written for them, the drivers that run those grids (or this process, without Ray), the stores they
fill, and the faults injected while they run (kills, an S3 freeze). ``scenarios`` says what to run
and what must hold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from cluster.chaos.kit import MotoS3, Standin, TwoNodeCluster
from cluster.chaos.sizes import ROOT, Suite, grid_data

PRICES = {"input": 1.0, "output": 4.0, "cache_read": 0.1, "cache_write": 1.25, "reasoning": 4.0}
"""Nominal USD per million tokens for the stand-in's models (offline models cost nothing)."""
FAULT_COUNTERS = ("rate_limited", "server_errors", "timeouts", "garbage")


class Stage:
    """One cluster and one S3 server: grids, drivers, stores and injections for the scenarios."""

    proc: subprocess.Popen[bytes] | None
    """The driver a scenario is running now (set by the scenario; the kills act on it)."""

    def __init__(self, suite: Suite, cluster: TwoNodeCluster, moto: MotoS3) -> None:
        assert suite.work is not None, "run() gives the suite its work folder"
        self.s = suite
        self.work = suite.work
        self.cluster = cluster
        self.moto = moto
        self.options = moto.bucket("chaos")
        self.drivers: list[subprocess.Popen[bytes]] = []
        self.prices_path = self._prices()
        self.env = {**cluster.env, "AWS_ACCESS_KEY_ID": "foo", "AWS_SECRET_ACCESS_KEY": "foo",
                    "AWS_DEFAULT_REGION": "us-east-1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
        self.env.pop("AWS_PROFILE", None)

    # ---- setup ----------------------------------------------------------------------------------
    def _prices(self) -> Path:
        table = yaml.safe_load((ROOT / "configs/prices/2026-12.yaml").read_text())
        table["version"] = "chaos-nominal"
        table["models"]["openai/apiflow/*"] = {**PRICES, "source": "nominal (chaos suite)"}
        path = self.work / "prices.yaml"
        path.write_text(yaml.safe_dump(table))
        return path

    def faults(self) -> dict[str, Any]:
        share = self.s.fault_rate / 4  # four kinds, equal shares; dice per request
        return {"p_429": share, "p_500": share, "p_timeout": share, "p_garbage": share,
                "timeout_s": self.s.hang_s, "retry_after_s": 0.5, "seed": self.s.seed}  # fmt: skip

    def grid(self, name: str, url: str, trials: int, budget: float | None = None) -> Path:
        """A grid YAML for ``trials`` provider trials against ``url``, stored under s3://chaos/<name>."""
        data = grid_data(self.s, name, url, trials, self.options, self.prices_path, budget)
        path = self.work / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    def store(self, name: str) -> Any:
        from apiflow.results.store import ResultStore

        return ResultStore(f"s3://chaos/{name}", self.options)

    def planned(self, grid: Path) -> set[str]:
        from cluster.driver import absolute_paths
        from cluster.plan import plan_grid
        from cluster.spec import load_grid
        from cluster.worker import load_checked_bank

        spec = absolute_paths(load_grid(grid))
        return {t.trial_id for t in plan_grid(spec, load_checked_bank(spec))}

    # ---- drivers ----------------------------------------------------------------------------------
    def driver(self, grid: Path, log_name: str) -> subprocess.Popen[bytes]:
        log = open(self.work / f"{log_name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "cluster.driver", str(grid), "--address", self.cluster.address, "--no-progress"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.drivers.append(proc)
        return proc

    def finish(self, proc: subprocess.Popen[bytes], deadline: float) -> int:
        """Wait for a driver until the deadline; past it the driver is killed (and that is reported)."""
        try:
            return proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return -9

    def run_inproc(self, grid: Path, max_runs: int = 4) -> tuple[int, int]:
        """Run the grid's remaining trials in this process (no Ray), again while some end unstored."""
        import asyncio

        from cluster.driver import absolute_paths
        from cluster.plan import plan_grid, remaining
        from cluster.spec import load_grid
        from cluster.worker import TrialRunner, load_checked_bank

        spec = absolute_paths(load_grid(grid))
        plan = plan_grid(spec, load_checked_bank(spec))
        # One process holds what the cluster's actors would: their concurrency, all of it (not part of the ids).
        busy = spec.model_copy(update={"concurrency": spec.concurrency.model_copy(
            update={"trials_per_actor": self.s.actors * self.s.trials_per_actor})})  # fmt: skip
        runner = TrialRunner(busy, "chaos-inproc")
        for run in range(1, max_runs + 1):
            todo = remaining(plan, runner.store.done_ids())
            if not todo:
                return run - 1, 0
            asyncio.run(runner.run_batch(todo))
        return max_runs, 0 if not remaining(plan, runner.store.done_ids()) else 3

    def run_to_end(self, grid: Path, name: str, deadline: float, max_runs: int = 4) -> tuple[int, int]:
        """Run (and rerun) the driver until it exits 0 or ``max_runs``; ``(runs, last exit status)``."""
        if name.split("-")[0] in self.s.inproc:
            return self.run_inproc(grid, max_runs)
        status = 1
        for run in range(1, max_runs + 1):
            status = self.finish(self.driver(grid, f"{name}-run{run}"), deadline)
            if status == 0 or time.monotonic() > deadline:
                return run, status
        return max_runs, status

    # ---- measurements ---------------------------------------------------------------------------
    def rows(self, name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
        store = self.store(name)
        paths = store.objects.list("rows", (".parquet", ".arrow"))
        return store.read_rows().to_pylist(), store.read_rows(failures=True).to_pylist(), paths

    def true_spend(self, before: dict[str, Any], after: dict[str, Any]) -> float:
        billed = {k: after[f"billed_{k}"] - before[f"billed_{k}"] for k in ("input", "output", "cache_read")}
        return sum(billed[k] * PRICES[k] for k in billed) / 1_000_000

    @staticmethod
    def injected(before: dict[str, Any], after: dict[str, Any]) -> int:
        return sum(after[k] - before[k] for k in FAULT_COUNTERS)

    # ---- injections -----------------------------------------------------------------------------
    def _wait_calls(self, standin: Standin, target: float, deadline: float) -> str:
        """Wait until the stand-in answered ``target`` calls; "" when reached, else why not."""
        while standin.stats()["answered"] < target:
            if self.proc is not None and self.proc.poll() is not None:
                return f"SKIPPED: the driver exited ({self.proc.returncode}) before {target:.0f} calls"
            if time.monotonic() > deadline:
                return "SKIPPED: deadline"
            time.sleep(0.2)
        return ""

    def _kill_driver(self) -> str:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        return "driver SIGKILLed; next phase reruns it"

    def _kill_actor(self) -> str:
        for node in (self.cluster.head, self.cluster.node):
            workers = self.cluster.workers(node)
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                return f"killed TrialWorker pid {workers[0]} on {node.name}"
        return "SKIPPED: no TrialWorker process found"

    def _kill_raylet(self) -> str:
        workers = len(self.cluster.workers(self.cluster.node))
        killed = self.cluster.kill_raylet(self.cluster.node)
        if killed is None:
            return "SKIPPED: node-2 raylet not found"

        self.cluster.replace_node_later(15.0)
        return f"raylet pid {killed[0]} killed ({workers} TrialWorkers on it); replacement in 15 s"

    def _pause_s3(self) -> str:
        self.moto.pause(self.s.s3_pause_s)
        return f"moto SIGSTOP {self.s.s3_pause_s:.0f} s, then SIGCONT"
