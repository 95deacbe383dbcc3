"""Benchmark: ``apiflow bank verify`` on the whole bank — manifest, load, and every gate — on one core.

Usage: .venv/bin/python bench/bench_bank.py [BANK_DIR] [--sims]

Prints CPU seconds (``time.process_time``, what one core spends; wall time on a shared machine
is printed too) per phase, the total against the 10 s target, and ratios against a baseline
measured in the same run: one plain golden replay of every task through the same harness.
With ``--sims`` it also runs every offline model (oracle, blank, each ``apiflow/sim`` profile)
once per task through the full agent loop and prints pass rates by task kind and chain length.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from apiflow.authoring.gates import chains as chain_gates
from apiflow.authoring.gates import spec_text
from apiflow.authoring.gates.harness import card_message, golden_calls, run_script
from apiflow.authoring.gates.oracle import solvability
from apiflow.authoring.gates.result import GateLog
from apiflow.authoring.gates.solo import triad
from apiflow.authoring.gates.static import discoverability, leak
from apiflow.bank import load_bank
from apiflow.bank.manifest import verify_manifest

TARGET_S = 10.0


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def sims(bank: Any) -> None:
    """Pass rate of each offline model: solo, and chains bucketed by length."""
    from apiflow.agent import TrialSpec
    from apiflow.models import OFFLINE_PROFILES, make_model
    from apiflow.runner import play_trial_sync

    buckets = ("solo", "chain 2-6", "chain 7-11", "chain 12-16", "chain 17-20")
    print(f"{'model':<22}" + "".join(f"{b:>13}" for b in buckets) + f"{'all':>8}")
    for name in ["apiflow/oracle", "apiflow/blank", *(f"apiflow/sim:{p}" for p in OFFLINE_PROFILES)]:
        tally = {b: [0, 0] for b in (*buckets, "all")}
        for task in bank.tasks.values():
            record = play_trial_sync(
                TrialSpec(
                    task=task,
                    world=bank.world_of(task),
                    seed=0,
                    epoch=1,
                    bank_name=bank.name,
                    bank_hash=bank.hash,
                    run_id="bench",
                    model_slug=name.replace("/", "-"),
                ),
                make_model(name, task, 0),
            )
            bucket = "solo" if task.kind == "solo" else buckets[1 + min(3, (task.length - 2) // 5)]
            for key in (bucket, "all"):
                tally[key][0] += bool(record.passed)
                tally[key][1] += 1
        print(
            f"{name:<22}"
            + "".join(f"{tally[b][0] / max(1, tally[b][1]):>13.3f}" for b in buckets)
            + f"{tally['all'][0] / tally['all'][1]:>8.3f}"
        )


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else "bank/v1"
    rows: list[tuple[str, float, float]] = []
    _, cpu, wall = timed(lambda: verify_manifest(__import__("pathlib").Path(root)))
    rows.append(("manifest", cpu, wall))
    bank, cpu, wall = timed(lambda: load_bank(root))
    rows.append(("load", cpu, wall))
    worlds = bank.worlds
    tasks = list(bank.tasks.values())
    solos = [t for t in tasks if t.kind == "solo"]
    specs = {w: spec_text(d) for w, d in worlds.items()}

    def baseline() -> None:
        for t in tasks:
            run_script(t, worlds[t.world], golden_calls(t), card_message(t.expected_card))

    _, base_cpu, base_wall = timed(baseline)
    log = GateLog()
    phases: list[tuple[str, Callable[[], Any]]] = [
        ("triad", lambda: [triad(t, worlds[t.world], log) for t in solos]),
        ("solvability", lambda: [solvability(t, worlds[t.world], log) for t in solos]),
        ("leak", lambda: [leak(t, worlds[t.world], specs[t.world], log) for t in solos]),
        (
            "discoverability",
            lambda: [discoverability(t, worlds[t.world], specs[t.world], log) for t in solos],
        ),
        (
            "chains",
            lambda: [
                chain_gates.check(
                    [c for c in tasks if c.world == w and c.kind == "chain"],
                    d,
                    {s.length: s for s in solos if s.world == w},
                    log,
                )
                for w, d in worlds.items()
            ],
        ),
    ]
    for name, fn in phases:
        _, cpu, wall = timed(fn)
        rows.append((name, cpu, wall))
    total_cpu = sum(r[1] for r in rows)
    total_wall = sum(r[2] for r in rows)
    print(
        f"bank {bank.name} {bank.hash[:16]}: {len(tasks)} tasks, {len(log.results)} gate checks, "
        f"{len(log.failures())} failures"
    )
    print(f"{'phase':<16}{'cpu s':>9}{'wall s':>9}{'x baseline':>12}")
    for name, cpu, wall in rows:
        print(f"{name:<16}{cpu:>9.2f}{wall:>9.2f}{cpu / base_cpu:>12.2f}")
    print(f"{'baseline':<16}{base_cpu:>9.2f}{base_wall:>9.2f}{1.0:>12.2f}   (one golden replay per task)")
    verdict = "within" if total_cpu <= TARGET_S else "OVER"
    print(
        f"{'total':<16}{total_cpu:>9.2f}{total_wall:>9.2f}{total_cpu / base_cpu:>12.2f}   "
        f"{verdict} the {TARGET_S:.0f} s one-core target"
    )
    if "--sims" in sys.argv:
        sims(bank)
    return 0 if not log.failures() else 1


if __name__ == "__main__":
    raise SystemExit(main())
