"""The chaos suite's scenarios (``bench/chaos.py``): its sizes (``Suite``) and the runs, kills and
checks on one cluster and one S3 server (``Chaos``)."""

from __future__ import annotations

import collections
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cluster.chaos import report as chaosreport
from cluster.chaos.kit import MotoS3, Standin, TwoNodeCluster
from cluster.chaos.report import Check, Figures

ROOT = Path(__file__).resolve().parents[2]

MODELS = ("openai/apiflow/oracle", "openai/apiflow/sim:strong", "openai/apiflow/sim:weak")
PRICES = {"input": 1.0, "output": 4.0, "cache_read": 0.1, "cache_write": 1.25, "reasoning": 4.0}
"""Nominal USD per million tokens for the stand-in's models (offline models cost nothing)."""
FAULT_COUNTERS = ("rate_limited", "server_errors", "timeouts", "garbage")


FAULTS_TRIALS = 1000
"""The faults scenario's size when ``--faults-trials`` is not given (capped at ``trials``)."""


@dataclass
class Suite:
    """Sizes and timings (flags). Every scenario's trials are the clean grid's or its first part: the
    clean run is the reference each one is compared with, so nothing may run a trial it did not."""

    trials: int = 5000
    faults_trials: int = 0
    """Trials of the faults scenario, the first this many of the clean grid's; 0: ``min(FAULTS_TRIALS,
    trials)``. More than ``trials`` is refused: those extra trials would have no reference."""
    epochs: int = 1
    driver_kills: int = 3
    budget_kills: int = 2
    s3_pause_s: float = 10.0
    fault_rate: float = 0.10
    hang_s: float = 5.0
    call_timeout_s: float = 4.0
    budget_fraction: float = 0.4
    max_attempts: int = 2
    """Attempts per provider call. Low on purpose: ~1 % of calls exhaust their retries, so trials end as
    provider outcomes (failure rows) and the resume path that retries them is exercised too."""
    actors: int = 4
    trials_per_actor: int = 16
    deadline_s: float = 2400.0
    budget_rerun: bool = True
    """Rerun the budget grid once more after BUDGET REACHED (it may spend only the room left)."""
    seed: int = 9
    inproc: tuple[str, ...] = ()
    """Scenarios (``clean``, ``faults``) run in this process without Ray: the same TrialRunner, the same
    stand-in, the same S3 store, minus the driver start-up (how the small test fits its time)."""
    work: Path | None = None
    """Grid files and driver logs. None: a temp dir the run makes, removed when every check passed."""

    def __post_init__(self) -> None:
        if not self.faults_trials:
            self.faults_trials = min(FAULTS_TRIALS, self.trials)
        wrong = self.problems()
        if wrong:
            raise ValueError("; ".join(wrong))

    def problems(self) -> list[str]:
        """Why these sizes cannot give a verdict (empty when they can)."""
        wrong = []
        if self.trials < 1 or self.epochs < 1:
            wrong.append("trials and epochs must be at least 1")
        if not 1 <= self.faults_trials <= self.trials:
            wrong.append(f"faults_trials {self.faults_trials} must be 1..trials ({self.trials}): "
                         "the clean run is the faults scenario's reference")  # fmt: skip
        last = self.kill_points()[-1]
        if last >= 1.0:
            wrong.append(f"driver_kills {self.driver_kills}: the last injection would come at {last:.0%} of "
                         "the clean run's calls, after the grid ends")  # fmt: skip
        if not 0 < self.budget_fraction < 1:
            wrong.append("budget_fraction must be between 0 and 1 (the cap must stop the grid)")
        return wrong

    def kill_points(self) -> list[float]:
        """When each chaos injection comes, as a share of the clean run's provider calls: the driver
        kills, then the actor kill, the raylet kill and the S3 freeze."""
        kills = [0.08 + 0.12 * k for k in range(self.driver_kills)]
        base = 0.08 + 0.12 * self.driver_kills
        return [*kills, base, base + 0.1, base + 0.2]


def grid_data(
    suite: Suite,
    name: str,
    url: str,
    trials: int,
    options: dict[str, Any],
    prices: Path,
    budget: float | None,
) -> dict[str, Any]:
    """A scenario's grid: ``trials`` provider trials (rounded up to whole tasks per model), its first
    task slots, so a smaller grid's trials are the first of a larger one's (the same trial ids)."""
    per_model = math.ceil(trials / (len(MODELS) * suite.epochs))
    params = {"api_base": url, "api_key": "sk-standin", "timeout": suite.call_timeout_s}
    data = {
        "name": "chaos", "bank": str(ROOT / "bank/sample"), "seed": suite.seed, "epochs": suite.epochs,
        "models": [{"model": m, "params": params, "max_tokens": 1024} for m in MODELS],
        "tasks": {"kind": "solo", "count": per_model},
        "out": f"s3://chaos/{name}", "storage_options": options, "price_table": str(prices),
        "retry": {"max_attempts": suite.max_attempts, "base_s": 0.05, "max_wait_s": 0.5, "max_elapsed_s": 120},
        "concurrency": {"actors": suite.actors, "trials_per_actor": suite.trials_per_actor},
        "budget_usd": budget,
    }  # fmt: skip
    return {k: v for k, v in data.items() if v is not None}


class Chaos:
    """Runs the scenarios on one cluster and one S3 server; collects figures and checks."""

    def __init__(self, suite: Suite, cluster: TwoNodeCluster, moto: MotoS3) -> None:
        assert suite.work is not None, "run() gives the suite its work folder"
        self.s = suite
        self.work = suite.work
        self.cluster = cluster
        self.moto = moto
        self.options = moto.bucket("chaos")
        self.figures: list[Figures] = []
        self.drivers: list[subprocess.Popen[bytes]] = []
        self.checks: list[Check] = []
        self.clean: dict[str, tuple[Any, ...]] = {}
        self.clean_calls = 0
        self.clean_cost = 0.0
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

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.checks.append(Check(name, bool(ok), detail))

    def compare(self, scenario: str, rows: list[dict[str, Any]], subset: set[str] | None = None) -> None:
        """Per-trial results and per-model pass counts against the clean run, over ``subset`` (the
        scenario's planned trials; default the clean grid's)."""
        mine = {r["trial_id"]: chaosreport.result(r) for r in rows}
        ref = {k: v for k, v in self.clean.items() if subset is None or k in subset}
        unmatched = (subset or set(mine)) - set(self.clean)
        self.check(f"{scenario}: every trial has a clean reference", not unmatched,
                   f"{len(unmatched)} trials the clean run did not run")  # fmt: skip
        differ = sorted(k for k in ref if mine.get(k) != ref[k])
        counts = collections.Counter((v[0], v[1]) for v in mine.values())
        ref_counts = collections.Counter((v[0], v[1]) for v in ref.values())
        self.check(f"{scenario}: pass counts equal the clean run", counts == ref_counts,
                   f"passed per model {chaosreport.passes(counts)} vs clean {chaosreport.passes(ref_counts)}")  # fmt: skip
        by_id = {r["trial_id"]: r for r in rows}
        shown = "; ".join(f"{k[:12]} {by_id[k]['task_id'] if k in by_id else '?'} clean {ref[k]} now {mine.get(k)} "
                          f"termination {by_id[k]['termination'] if k in by_id else 'missing'}" for k in differ[:3])  # fmt: skip
        self.check(f"{scenario}: every trial's result equals the clean run's", not differ,
                   f"{len(differ)} of {len(ref)} differ (verdict, passed, tokens, messages, calls)"
                   + (f": {shown}" if shown else ""))  # fmt: skip

    # ---- scenarios --------------------------------------------------------------------------------
    def scenario_clean(self) -> None:
        began = time.monotonic()
        with _standin() as standin:
            grid = self.grid("clean", standin.url, self.s.trials)
            runs, status = self.run_to_end(grid, "clean", began + self.s.deadline_s, max_runs=1)
            stats = standin.stats()
        rows, failures, paths = self.rows("clean")
        planned = self.planned(grid)
        self.clean = {r["trial_id"]: chaosreport.result(r) for r in rows}
        self.clean_calls = stats["answered"]
        self.clean_cost = sum(r["cost_usd"] or 0.0 for r in rows)
        self.max_trial_cost = max((r["cost_usd"] or 0.0 for r in rows), default=0.0)
        self.figures.append(Figures("clean (reference)", time.monotonic() - began, len(rows), 0, 0, 0,
                                    len(planned - set(self.clean)), len(paths) - len(set(self.clean)),
                                    self.clean_cost, None, f"{stats['answered']} calls, exit {status}"))  # fmt: skip
        self.check("clean: every planned trial stored, no provider outcome", set(self.clean) == planned
                   and not failures, f"{len(self.clean)}/{len(planned)} rows, {len(failures)} failures")  # fmt: skip

    def scenario_faults(self) -> None:
        began = time.monotonic()
        with _standin(**self.faults()) as standin:
            grid = self.grid("faults", standin.url, self.s.faults_trials)
            first = self.finish(self.driver(grid, "faults-run1"), began + self.s.deadline_s)
            runs, status = (
                (0, first)
                if first == 0
                else self.run_to_end(grid, "faults-resume", began + self.s.deadline_s)
            )
            injected = self.injected(chaosreport.zero(), standin.stats())
        rows, failures, paths = self.rows("faults")
        planned = self.planned(grid)
        stored = {r["trial_id"] for r in rows}
        in_rows = sum(r["retries"] for r in rows)
        recorded = chaosreport.recorded(rows, failures)
        failed_ids = {f["trial_id"] for f in failures}
        self.figures.append(Figures("provider faults only", time.monotonic() - began, len(rows), injected,
                                    recorded, len(failed_ids), len(planned - stored), len(paths) - len(stored),
                                    sum((r["cost_usd"] or 0.0) for r in rows + failures), None,
                                    f"first run exit {first}; {runs} resume(s), exit {status}"))  # fmt: skip
        self.check("faults: trials lost 0", planned == stored, f"{len(planned - stored)} lost")
        self.check(
            "faults: duplicate rows 0", len(paths) == len(stored), f"{len(paths)} objects, {len(stored)} ids"
        )
        self.check("faults: every injected fault recorded (retry log or failure row)", recorded == injected,
                   f"injected {injected}; recorded {recorded} ({in_rows} retries in rows, the rest in "
                   f"{len(failures)} failure rows)")  # fmt: skip
        self.check("faults: every failed trial retried on resume and stored", failed_ids <= stored,
                   f"{len(failed_ids)} trials had a provider outcome; {len(failed_ids - stored)} still unstored")  # fmt: skip
        self.compare("faults", rows, subset=planned)

    def scenario_chaos(self) -> None:
        began = time.monotonic()
        deadline = began + self.s.deadline_s
        # The cap must not stop this grid: 1.5x the clean spend, plus what each kill genuinely
        # spends again (the trials it interrupts run twice; they can be a large share of a small grid).
        cap = round(1.5 * self.clean_cost + self.s.driver_kills * self.in_flight_cost(), 6)
        with _standin(**self.faults()) as standin:
            grid = self.grid("chaos", standin.url, self.s.trials, budget=cap)
            planned = self.planned(grid)
            labels = [f"driver SIGKILL {k + 1}/{self.s.driver_kills}" for k in range(self.s.driver_kills)]
            actions: list[Callable[[], str]] = [self._kill_driver] * self.s.driver_kills
            labels += ["actor SIGKILL", "node-2 raylet SIGKILL", f"S3 frozen {self.s.s3_pause_s:.0f} s"]
            actions += [self._kill_actor, self._kill_raylet, self._pause_s3]
            events = list(zip(labels, self.s.kill_points(), actions, strict=True))
            self.proc: subprocess.Popen[bytes] | None = None
            runs = 0
            for label, at, action in events:
                t0, s0, r0 = time.monotonic(), standin.stats(), len(self.store("chaos").done_ids())
                if self.proc is None or self.proc.poll() is not None:
                    runs += 1
                    self.proc = self.driver(grid, f"chaos-run{runs}")
                note = self._wait_calls(standin, at * self.clean_calls, deadline)
                if not note:
                    note = action()
                s1 = standin.stats()
                self.figures.append(Figures(label, time.monotonic() - t0, len(self.store("chaos").done_ids()) - r0,
                                            self.injected(s0, s1), note=note))  # fmt: skip
                self.check(
                    f"chaos: {label} injected while the grid ran", not note.startswith("SKIPPED"), note
                )
            t0, s0 = time.monotonic(), standin.stats()
            r0 = len(self.store("chaos").done_ids())
            status = self.finish(self.proc, deadline) if self.proc is not None else 1
            extra, status = (0, status) if status == 0 else self.run_to_end(grid, "chaos-final", deadline)
            s1 = standin.stats()
            self.figures.append(Figures("run to the end + resumes", time.monotonic() - t0,
                                        len(self.store("chaos").done_ids()) - r0, self.injected(s0, s1),
                                        note=f"{extra} rerun(s), last exit {status}"))  # fmt: skip
            true = self.true_spend(chaosreport.zero(), s1)
            injected = self.injected(chaosreport.zero(), s1)
        rows, failures, paths = self.rows("chaos")
        stored = {r["trial_id"] for r in rows}
        failed_ids = {f["trial_id"] for f in failures}
        recorded = chaosreport.recorded(rows, failures)
        on_record = sum((r["cost_usd"] or 0.0) for r in rows + failures)
        self.figures.append(Figures("chaos total", time.monotonic() - began, len(rows), injected, recorded,
                                    len(failed_ids), len(planned - stored), len(paths) - len(stored), true, cap,
                                    f"on record ${on_record:.4f}; {injected - recorded} faults hit attempts "
                                    "that were killed (no record possible)"))  # fmt: skip
        self.check(
            "chaos: trials lost 0", planned == stored, f"{len(planned - stored)} of {len(planned)} lost"
        )
        self.check(
            "chaos: duplicate rows 0", len(paths) == len(stored), f"{len(paths)} objects, {len(stored)} ids"
        )
        self.check("chaos: every failed trial retried on resume and stored", failed_ids <= stored,
                   f"{len(failed_ids)} trials had a provider outcome; {len(failed_ids - stored)} unstored")  # fmt: skip
        self.check("chaos: faults recorded never exceed faults injected", recorded <= injected,
                   f"recorded {recorded}, injected {injected}")  # fmt: skip
        self.check("chaos: spend within the cap", true <= cap, f"true ${true:.4f} (billed), cap ${cap:.4f}")
        self.compare("chaos", rows)

    def scenario_budget(self) -> None:
        began = time.monotonic()
        deadline = began + self.s.deadline_s
        cap = round(self.s.budget_fraction * self.clean_cost, 6)
        with _standin(**self.faults()) as standin:
            grid = self.grid("budget", standin.url, self.s.trials, budget=cap)
            calls_at_cap = self.s.budget_fraction * self.clean_calls
            self.proc = None
            for k in range(self.s.budget_kills):
                self.proc = self.driver(grid, f"budget-run{k + 1}")
                # Early: admission holds back each trial's expected cost until it ends, so on a small
                # grid the last fraction of ``calls_at_cap`` may never be reached.
                at = calls_at_cap * (k + 1) / (2 * (self.s.budget_kills + 1))
                note = self._wait_calls(standin, at, deadline)
                note = note or self._kill_driver()
                self.check(
                    f"budget: driver SIGKILL {k + 1} while spending", not note.startswith("SKIPPED"), note
                )
            last = self.finish(self.driver(grid, "budget-last"), deadline)
            at_cap = standin.stats()
            before_rerun = self.store("budget").recorded_spend()
            rerun = self.finish(self.driver(grid, "budget-rerun"), deadline) if self.s.budget_rerun else 0
            after = standin.stats()
        rows, failures, _ = self.rows("budget")
        room = max(0.0, cap - before_rerun[0] - before_rerun[1])
        true = self.true_spend(chaosreport.zero(), after)
        rerun_spend = self.true_spend(at_cap, after)
        on_record = sum((r["cost_usd"] or 0.0) for r in rows + failures)
        concurrent = self.s.actors * self.s.trials_per_actor
        allowance = self.s.budget_kills * self.in_flight_cost()
        self.figures.append(Figures(f"budget cap {self.s.budget_fraction:.0%} of clean, {self.s.budget_kills} driver kills",
                                    time.monotonic() - began, len(rows), self.injected(chaosreport.zero(), after), None, None,
                                    None, None, true, cap,
                                    f"on record ${on_record:.4f}; after-cap rerun spent ${rerun_spend:.4f}; "
                                    f"exits {last}/{rerun}"))  # fmt: skip
        self.check("budget: true spend <= cap + what killed drivers had in flight", true <= cap + allowance,
                   f"true ${true:.4f}, cap ${cap:.4f}, allowance ${allowance:.4f} = {self.s.budget_kills} kills x "
                   f"{concurrent} concurrent trials x dearest trial ${self.max_trial_cost:.4f}")  # fmt: skip
        overshoot = self.in_flight_cost()
        self.check(
            "budget: spend on record <= cap + what trials in flight can cost beyond it",
            on_record <= cap + overshoot + 1e-9,
            f"${on_record:.4f} of ${cap:.4f} (+ ${overshoot:.4f} = {self.s.actors * self.s.trials_per_actor} "
            f"trials in flight x dearest ${self.max_trial_cost:.4f})",
        )
        if self.s.budget_rerun:
            self.check("budget: a rerun after BUDGET REACHED spends at most the room left (+ its in-flight excess)",
                       rerun_spend <= room + overshoot + 1e-9,
                       f"rerun spent ${rerun_spend:.4f}; room left on record ${room:.4f} (a fresh ledger would allow "
                       f"${cap:.4f} again)")  # fmt: skip
        self.check("budget: the cap stopped the grid (not every trial ran)", len(rows) < len(self.clean),
                   f"{len(rows)} of {len(self.clean)} stored")  # fmt: skip

    def in_flight_cost(self) -> float:
        """What one kill can hide: every concurrent trial at the dearest trial's cost."""
        return self.s.actors * self.s.trials_per_actor * self.max_trial_cost

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

    # ---- report ---------------------------------------------------------------------------------
    def table(self) -> list[str]:
        return chaosreport.table(self.figures, self.checks)


class _standin:  # noqa: N801 - used as a context manager like open()
    def __init__(self, **faults: Any) -> None:
        self.server = Standin(**faults)

    def __enter__(self) -> Standin:
        self.server.start()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.stop()
