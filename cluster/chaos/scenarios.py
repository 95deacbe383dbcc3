"""The chaos suite's scenarios (``bench/chaos.py``): clean, faults, chaos and budget, each run on the
``Stage`` (one cluster, one S3 server) and checked against the clean run (``Chaos``)."""

from __future__ import annotations

import collections
import subprocess
import time
from collections.abc import Callable
from typing import Any

from cluster.chaos import report as chaosreport
from cluster.chaos.kit import MotoS3, Standin, TwoNodeCluster
from cluster.chaos.report import Check, Figures
from cluster.chaos.sizes import Suite
from cluster.chaos.stage import Stage


class Chaos(Stage):
    """Runs the scenarios on one cluster and one S3 server; collects figures and checks."""

    def __init__(self, suite: Suite, cluster: TwoNodeCluster, moto: MotoS3) -> None:
        super().__init__(suite, cluster, moto)
        self.figures: list[Figures] = []
        self.checks: list[Check] = []
        self.clean: dict[str, tuple[Any, ...]] = {}
        self.clean_calls = 0
        self.clean_cost = 0.0

    # ---- checks ---------------------------------------------------------------------------------
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
