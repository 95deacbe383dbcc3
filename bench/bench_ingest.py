"""Ingest throughput: the published fixtures replicated to a few thousand files.

One command: ``.venv/bin/python bench/bench_ingest.py [--copies 100] [--workers 2]``.

Copies ``tests/data/transcripts`` (42 trials, 1.8 MB) ``--copies`` times into a temp
folder in the published layout ``<model>/<task>-t<N>.json``, warms the page cache, then
measures in the same run:

* baseline: a plain ``json.load`` loop over every file (one process, parsing only);
* ``ingest`` (parse + flatten + Parquet) with 1 worker and with ``--workers`` workers;

and prints files/s, MB/s, the ratios to the baseline, peak memory, and an extrapolation to
the full published corpus (56,037 files, 2.2 GB; target <= 30 s on 2 cores, issue 11 §6).

CPU seconds are user+system of every process of a run (this process and its pool workers,
reaped when the pool shuts down). On a shared machine wall time is mostly other people's
load, so the verdict is the projection from CPU seconds: the ``--workers`` run's CPU (driver
+ workers) spread over ``--workers`` free cores, scaled by bytes to 2.2 GB. The 1-minute load
average is printed at start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apiflow.analysis.ingest import find_trial_files, ingest  # noqa: E402

FIXTURES = ROOT / "tests" / "data" / "transcripts"
CORPUS_BYTES = 2.2e9
TARGET_S = 30.0


def replicate(dest: Path, copies: int) -> tuple[int, int]:
    """Copy every fixture ``copies`` times (model folders suffixed ``-cNNN``); returns (files, bytes)."""
    sources = find_trial_files([FIXTURES])
    files = nbytes = 0
    for copy in range(copies):
        for src in sources:
            target = dest / f"{src.parent.name}-c{copy:03d}" / src.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            files += 1
            nbytes += src.stat().st_size
    return files, nbytes


def json_load_loop(paths: list[Path]) -> int:
    """The baseline: parse every file with the standard library, nothing else."""
    n = 0
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            n += len(json.load(handle))
    return n


def cpu_seconds() -> float:
    """User+system CPU of this process and its reaped children (pool workers are reaped on shutdown)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, *args, **kwargs) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of all processes, result) of ``fn(*args, **kwargs)``."""
    start, cpu = time.perf_counter(), cpu_seconds()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, cpu_seconds() - cpu, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--copies", type=int, default=100, help="replicas of the 42 fixtures (default 100 = 4,200 files)"
    )
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        tree = Path(tmp) / "tree"
        files, nbytes = replicate(tree, args.copies)
        paths = find_trial_files([tree])
        json_load_loop(paths)  # warm the page cache so every measurement reads from memory
        mb = nbytes / 1e6
        load = os.getloadavg()[0]
        base_s, base_cpu, _ = timed(json_load_loop, paths)
        rows = [("json.load loop (baseline, 1 process)", base_s, base_cpu)]
        for workers in sorted({1, args.workers}):
            seconds, cpu, stats = timed(ingest, [tree], Path(tmp) / f"out-{workers}.parquet", workers=workers)
            assert stats.rows == files, (stats.rows, files)
            rows.append((f"apiflow ingest, {workers} worker(s)", seconds, cpu))
        load_end = os.getloadavg()[0]
        print(
            f"corpus: {files:,} files, {mb:,.1f} MB (mean {nbytes / files / 1e3:.1f} KB/file); "
            f"1-min load average {load:.2f} at start, {load_end:.2f} at end, on {os.cpu_count()} cores"
        )
        print(
            f"{'':40s} {'wall s':>7s} {'cpu s':>6s} {'files/s':>9s} {'MB/s':>7s} {'vs baseline':>12s} "
            f"{'2.2 GB wall':>12s}"
        )
        for name, seconds, cpu in rows:
            print(
                f"{name:40s} {seconds:7.2f} {cpu:6.2f} {files / seconds:9,.0f} {mb / seconds:7.1f} "
                f"{base_s / seconds:11.2f}x {CORPUS_BYTES / nbytes * seconds:10.1f} s"
            )
        best = min(seconds for _, seconds, _ in rows[1:])
        cpu_n = rows[-1][2]
        on_free_cores = CORPUS_BYTES / nbytes * cpu_n / args.workers
        verdict = "meets" if on_free_cores <= TARGET_S else "MISSES"
        print(
            f"CPU per file: {rows[1][2] / files * 1e3:.3f} ms with 1 worker, {cpu_n / files * 1e3:.3f} ms with "
            f"{args.workers} (driver + workers); json.load alone {base_cpu / files * 1e3:.3f} ms"
        )
        print(
            f"best ingest wall clock extrapolates to {CORPUS_BYTES / nbytes * best:.1f} s for 2.2 GB "
            f"(at load {load:.2f}-{load_end:.2f})"
        )
        print(
            f"projected 2.2 GB from CPU time on {args.workers} free cores: {on_free_cores:.1f} s ({verdict} the "
            f"{TARGET_S:.0f} s target; {args.workers}-worker CPU seconds of all processes / {args.workers}; "
            f"excludes contention from other processes)"
        )
        peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
        peak_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e3
        print(f"peak RSS: driver {peak_self:.0f} MB, largest worker {peak_children:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
