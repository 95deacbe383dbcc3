"""Issue 11 §4: the provider path at cluster concurrency — calls in flight, calls/s, memory.

A grid of ``apiflow/blank`` trials (one model call each: a fixed number per trial) through the
real provider path (Ray actors -> ``LiteLLMClient`` -> litellm -> HTTP) against the stand-in
provider in its own process on 127.0.0.1, answering every call after ``--latency-s`` (1 s).
Concurrency is actors x trials per actor; the ideal throughput is min(concurrency / latency,
rate limit). Reports the stand-in's peak of open requests (calls in flight), achieved calls/s in
the steady state (the middle 80% of answers) against the ideal, the driver's peak RSS and each
trial-worker actor's peak RSS (VmHWM, sampled from /proc while the grid runs), and the CPU per call
of every process taking part (actors, stand-in, driver, Ray's own), which bounds the calls/s two
cores can carry whatever the concurrency (docs/results/043-retries-and-rate-limits-measurements.md).

    python bench/bench_concurrency.py [--trials 5005] [--actors 2] [--per-actor 500] [--rpm N]
        [--latency-s 1] [--ramp-s S] [--dump series.json]

The grid spreads its first wave of starts over ``--ramp-s`` (the grid's ``concurrency.ramp_s``;
default the latency, 0 = all at once): a thousand trials started together answer together, and
each actor then works off its 500 answers in turns before its next calls go out, so every round
lasts the latency plus a whole burst's CPU. Each actor's garbage-collector time is printed too.

Runs on a private local Ray (``run_grid`` with no address: its own temp dir, stopped with the
grid). litellm's aiohttp pool allows 500 connections per host per process by default
(``AIOHTTP_CONNECTOR_LIMIT_PER_HOST``); this script raises it to the per-actor concurrency.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import yaml  # noqa: E402

from apiflow.bank import DEFAULT_BANK, load_bank  # noqa: E402
from apiflow.results.prices import DEFAULT_PRICE_TABLE  # noqa: E402
from cluster.chaos.kit import _wait_http, free_port  # noqa: E402


def _vm_hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _descendants(root: int) -> set[int]:
    """Every process below ``root`` (from /proc): our private Ray's workers, not another session's."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [root]
    while todo:
        for child in parents.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _actor_pids() -> list[int]:
    pids = []
    for pid in _descendants(os.getpid()):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"ray::TrialWorker" in cmd:
            pids.append(pid)
    return pids


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class PeakRss:
    """Samples every process below this one each second: the trial-worker actors' VmHWM (the
    kernel's own peak) and CPU time, and the CPU time of the stand-in and of Ray's own processes."""

    def __init__(self, standin: int) -> None:
        self.standin = standin
        self.peaks: dict[int, int] = {}
        self.cpu: dict[int, float] = {}
        self.other_cpu: dict[int, float] = {}
        """Ray's own processes (GCS, raylet, dashboard, idle workers): not actors, not the stand-in."""
        self.start: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.start = {pid: _cpu_s(pid) for pid in _descendants(os.getpid())}  # before the grid
        while not self.stop.wait(1.0):
            actors = set(_actor_pids())
            for pid in actors:
                self.peaks[pid] = max(self.peaks.get(pid, 0), _vm_hwm_kb(pid))
                self.cpu[pid] = max(self.cpu.get(pid, 0.0), _cpu_s(pid))
            for pid in _descendants(os.getpid()) - actors - {self.standin}:
                used = _cpu_s(pid) - self.start.get(pid, 0.0)
                self.other_cpu[pid] = max(self.other_cpu.get(pid, 0.0), used)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/bench_concurrency.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--trials", type=int, default=5005, help="trials (default 5005 = 13 tasks x 385 epochs)"
    )
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--per-actor", type=int, default=500, help="trials per actor at once (default 500)")
    parser.add_argument("--latency-s", type=float, default=1.0)
    parser.add_argument("--rpm", type=float, help="the grid's rate limit for the provider (default none)")
    parser.add_argument("--ramp-s", type=float, help="the grid's concurrency.ramp_s: the first wave's starts "
                        "spread over this many seconds (default: --latency-s; 0 = all at once)")  # fmt: skip
    parser.add_argument(
        "--dump", type=Path, help="write the stand-in's answer times and open requests here (JSON)"
    )
    args = parser.parse_args(argv)
    if min(args.trials, args.actors, args.per_actor) < 1 or args.latency_s <= 0:
        parser.error("--trials, --actors, --per-actor must be >= 1 and --latency-s > 0")
    ramp_s = args.latency_s if args.ramp_s is None else args.ramp_s
    os.environ["AIOHTTP_CONNECTOR_LIMIT_PER_HOST"] = str(max(500, args.per_actor))
    os.environ["AIOHTTP_CONNECTOR_LIMIT"] = str(max(1000, args.per_actor))
    from cluster.driver import run_grid
    from cluster.spec import GridSpec

    tasks = sorted(load_bank(DEFAULT_BANK).tasks)
    epochs = -(-args.trials // len(tasks))
    port = free_port()
    standin = subprocess.Popen([sys.executable, "-m", "apiflow.testing.standin_server", "--port", str(port),
                                "--latency-s", str(args.latency_s)], cwd=ROOT, stdout=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    work = Path(tempfile.mkdtemp(prefix="bench-conc-"))
    sampler = PeakRss(standin.pid)
    try:
        _wait_http(f"{url}/models", 120)
        table = yaml.safe_load(DEFAULT_PRICE_TABLE.read_text())
        table["models"]["openai/apiflow/*"] = dict(table["models"]["apiflow/*"])
        (work / "prices.yaml").write_text(json.dumps(table))
        spec = GridSpec.model_validate({
            "name": "concurrency", "bank": str(DEFAULT_BANK), "out": str(work / "out"),
            "price_table": str(work / "prices.yaml"), "epochs": epochs,
            "models": [{"model": "openai/apiflow/blank", "slug": "standin-blank",
                        "params": {"api_base": url, "api_key": "sk-standin", "timeout": 120}}],
            "concurrency": {"actors": args.actors, "trials_per_actor": args.per_actor, "ramp_s": ramp_s},
            **({"ratelimits": {"openai": {"rpm": args.rpm, "burst_s": 1.0}}} if args.rpm else {}),
        })  # fmt: skip
        sampler.thread.start()
        standin_cpu, driver_cpu = _cpu_s(standin.pid), time.process_time()
        started = time.perf_counter()
        summary = run_grid(spec, progress=False)
        wall = time.perf_counter() - started
        standin_cpu, driver_cpu = _cpu_s(standin.pid) - standin_cpu, time.process_time() - driver_cpu
        sampler.stop.set()
        stats = get_json(f"{url}/stats")
        series = get_json(f"{url}/stats/times")
        order = sorted(range(len(series["answered_at"])), key=series["answered_at"].__getitem__)
        times = [series["answered_at"][i] for i in order]
        held = [series["in_flight_at"][i] for i in order]
        if args.dump:
            args.dump.write_text(json.dumps({"answered_at": times, "in_flight_at": held}))
    finally:
        sampler.stop.set()
        standin.terminate()
        standin.wait(timeout=30)
    concurrency = args.actors * args.per_actor
    ideal = min(concurrency / args.latency_s, args.rpm / 60.0 if args.rpm else float("inf"))
    cut = len(times) // 10
    steady = times[cut : len(times) - cut]
    rate = (len(steady) - 1) / (steady[-1] - steady[0]) if len(steady) > 1 else 0.0
    held_steady = statistics.median(held[cut : len(held) - cut]) if len(held) > 2 * cut else 0
    driver_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    actors_mb = sorted(round(kb / 1024) for kb in sampler.peaks.values())
    load = os.getloadavg()
    print(f"{summary.tally.done} trials ({args.trials} asked), {stats['answered']} calls answered, "
          f"{stats['rejected']} rejected, {summary.tally.harness} harness outcomes; wall {wall:.1f} s "
          f"(Ray start-up and actors {summary.phases.get('ray_start_s', 0) + summary.phases.get('actors_s', 0):.1f} s); "
          f"load {load[0]:.1f} {load[1]:.1f}")  # fmt: skip
    print(f"concurrency {args.actors} actors x {args.per_actor} = {concurrency}; latency {args.latency_s} s; "
          f"rate limit {f'{args.rpm:.0f} rpm' if args.rpm else 'none'}; first wave ramped over {ramp_s:g} s")  # fmt: skip
    print(f"calls in flight (the stand-in's open requests): peak {stats['peak_in_flight']}, "
          f"median {held_steady:.0f} over the middle 80% of answers (target >= 1000)")  # fmt: skip
    print(f"throughput: {rate:.1f} calls/s steady (middle 80% of answers) vs ideal {ideal:.1f} = "
          f"{rate / ideal:.1%} (target >= 90%)")  # fmt: skip
    print(f"peak RSS: driver {driver_mb:.0f} MB; actors {actors_mb} MB (median "
          f"{statistics.median(actors_mb) if actors_mb else 0} MB)")  # fmt: skip
    for worker in summary.workers:
        print(f"actor {worker['pid']}: garbage collector {sum(worker['gc_s']):.2f} s in "
              f"{sum(worker['gc_count'])} collections ({worker['gc_count'][2]} full), longest "
              f"{worker['gc_longest_s'] * 1e3:.0f} ms")  # fmt: skip
        threads = worker.get("thread_cpu_s", {})
        named = sorted(((v, k) for k, v in threads.items() if v >= 0.05), reverse=True)
        print("  CPU by thread: " + ", ".join(f"{k} {v:.1f} s" for v, k in named[:6]))
    calls = max(1, stats["answered"])
    parts = {"actors": sum(sampler.cpu.values()), "stand-in": standin_cpu, "driver": driver_cpu,
             "Ray's own": sum(sampler.other_cpu.values())}  # fmt: skip
    per_call = sum(parts.values()) / calls
    cores = os.cpu_count() or 1
    bound = cores / per_call if per_call else float("inf")
    print("CPU per call: " + ", ".join(f"{k} {v / calls * 1e3:.1f} ms" for k, v in parts.items())
          + f"; in all {per_call * 1e3:.1f} ms")  # fmt: skip
    print(f"CPU bound: {cores} cores / {per_call * 1e3:.1f} ms = {bound:.0f} calls/s; achieved {rate:.1f} = "
          f"{rate / bound:.0%} of it; held in flight at that rate and latency (Little's law): "
          f"{min(bound, ideal) * args.latency_s:.0f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
