"""Provider limits learned (issue 25 §6): the gate configured 20x over the provider's real limit.

    .venv/bin/python bench/bench_ratelimit.py [--rpm 60] [--factor 20] [--epochs 1] [--in-flight 16]
        [--latency 0.5] [--bucket-s 15]

One grid of oracle trials (the sample bank's 13 tasks x ``--epochs``, ~124 calls an epoch) through
litellm's real ``openai/`` route to the stand-in provider, whose limit is ``--rpm`` requests a minute
(a one-second bucket, answered with 429 + ``Retry-After`` over it), on a private local Ray with
``--in-flight`` trials at once and the grid's rate limit set to ``--factor`` x ``--rpm``. Run twice, in
this order: (a) the fixed gate of before (``ratelimits.<key>.adaptive: false``), the baseline; (b) the adaptive
gate. Printed per arm: the share of requests answered 429, overall and after the first minute (from
the stand-in's first request), trials lost (harness/provider outcomes), the trial phase's wall time,
the gate's cuts and increases; then requests, 429s and the effective rate per ``--bucket-s``.
Goals for (b): <= 5 % 429s after the first minute, 0 trials lost. The grid's retry policy is the
default one (8 attempts, full jitter from 1 s). Figures: docs/results/043-retries-and-rate-limits-measurements.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

from apiflow.bank import DEFAULT_BANK  # noqa: E402
from apiflow.testing.standin_server import StandinConfig, StandinServer  # noqa: E402

MODEL = "gpt-5-mini"
FIRST_S = 60.0


def _arm(adaptive: bool, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One grid against a fresh stand-in; what the stand-in and the summary saw."""
    from cluster.driver import run_grid
    from cluster.spec import GridSpec

    server = StandinServer(StandinConfig(rpm=args.rpm, burst_s=1.0, latency_s=args.latency,
                                         plays=((MODEL, "apiflow/oracle"),)))  # fmt: skip
    server.start()
    try:
        spec = GridSpec.model_validate({
            "name": f"ratelimit-{'aimd' if adaptive else 'fixed'}", "bank": str(DEFAULT_BANK),
            "models": [{"slug": MODEL, "model": f"openai/{MODEL}",
                        "params": {"api_base": server.url, "api_key": "sk-bench", "timeout": 60}}],
            "epochs": args.epochs, "out": str(work / ("aimd" if adaptive else "fixed")),
            "price_table": str(ROOT / "configs/prices/2026-12.yaml"),
            "concurrency": {"actors": 1, "trials_per_actor": args.in_flight},
            "ratelimits": {"openai": {"rpm": args.rpm * args.factor, "burst_s": 1.0, "adaptive": adaptive}},
        })  # fmt: skip
        began = time.monotonic()
        summary = run_grid(spec, progress=False)
        wall = time.monotonic() - began
    finally:
        server.stop()
    stats = server.provider.stats
    gate = summary.gates[0] if summary.gates else {}
    return {
        "answered": sorted(stats.answered_at), "limited": sorted(stats.limited_at), "wall_s": wall,
        "trials_s": summary.phases.get("trials_s", wall), "planned": summary.planned,
        "stored": summary.tally.stored, "lost": summary.tally.harness, "gate": gate,
    }  # fmt: skip


def _share(limited: list[float], answered: list[float], since: float) -> tuple[float, int]:
    late_limited = sum(t >= since for t in limited)
    total = late_limited + sum(t >= since for t in answered)
    return (late_limited / total if total else 0.0), total


def _rate_at(gate: dict[str, Any], at: float) -> float | None:
    """The gate's effective rpm at monotonic time ``at`` (None: no series)."""
    series = gate.get("rpm_series")
    if not series:
        return None
    rate = series[0][1]
    for t, rpm in series:
        if gate["began"] + t > at:
            break
        rate = rpm
    return float(rate)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rpm", type=float, default=60.0, help="the stand-in's real limit (requests a minute)"
    )
    parser.add_argument(
        "--factor", type=float, default=20.0, help="the gate's configured limit / the real one"
    )
    parser.add_argument("--epochs", type=int, default=1, help="epochs of the sample bank's 13 tasks")
    parser.add_argument("--in-flight", type=int, default=16, help="trials at once")
    parser.add_argument("--latency", type=float, default=0.5, help="the stand-in's seconds per answer")
    parser.add_argument("--bucket-s", type=float, default=15.0, help="the time table's step")
    args = parser.parse_args(argv)
    arms: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ratelimit-") as work:
        for name, adaptive in (("fixed", False), ("aimd", True)):
            arms[name] = _arm(adaptive, args, Path(work))
    print(f"stand-in limit {args.rpm:.0f} rpm (1 s bucket), gate configured at {args.rpm * args.factor:.0f} rpm "
          f"(x{args.factor:g}, headroom 0.97); {arms['fixed']['planned']} oracle trials, {args.in_flight} in flight, "
          f"latency {args.latency} s; load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    for name, arm in arms.items():
        t0 = min(arm["answered"][:1] + arm["limited"][:1])
        overall, total = _share(arm["limited"], arm["answered"], t0)
        later, later_total = _share(arm["limited"], arm["answered"], t0 + FIRST_S)
        gate = arm["gate"]
        good_rpm = len(arm["answered"]) / max(1e-9, (max(arm["answered"]) - t0) / 60)
        print(f"({'a' if name == 'fixed' else 'b'}) {name:5}: {total} requests, 429s {overall:.1%}; after the first "
              f"minute {later:.1%} of {later_total}; trials lost {arm['lost']} of {arm['planned']} "
              f"(stored {arm['stored']}); trial phase {arm['trials_s']:.0f} s (wall {arm['wall_s']:.0f} s); "
              f"answered {good_rpm:.1f} rpm; gate: {gate.get('cuts', 0)} cuts, {gate.get('increases', 0)} "
              f"increases, {gate.get('stale_429s', 0)} stale 429s, ends at {gate.get('rpm', 0):.0f} rpm")  # fmt: skip
    print(f"per {args.bucket_s:g} s from each arm's first request: requests/429s (fixed) | requests/429s, "
          f"effective rpm at the step's end (aimd)")  # fmt: skip
    t0s = {name: min(arm["answered"][:1] + arm["limited"][:1]) for name, arm in arms.items()}
    end = max(max(arm["answered"] + arm["limited"]) - t0s[name] for name, arm in arms.items())
    step = 0.0
    while step < end:
        cells = []
        for name, arm in arms.items():
            lo, hi = t0s[name] + step, t0s[name] + step + args.bucket_s
            sent = sum(lo <= t < hi for t in arm["answered"] + arm["limited"])
            limited = sum(lo <= t < hi for t in arm["limited"])
            rate = _rate_at(arm["gate"], hi) if name == "aimd" else None
            cells.append(f"{sent:4d}/{limited:<4d}" + (f" {rate:7.1f}" if rate is not None else ""))
        print(f"  {step:5.0f}-{step + args.bucket_s:<5.0f} s  " + " | ".join(cells))
        step += args.bucket_s
    aimd = arms["aimd"]
    later, _ = _share(aimd["limited"], aimd["answered"], t0s["aimd"] + FIRST_S)
    ok = later <= 0.05 and aimd["lost"] == 0
    print("goals met" if ok else "GOALS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
