"""Ingest throughput: the published fixtures replicated to a few thousand files.

One command: ``.venv/bin/python bench/bench_ingest.py [--copies 100] [--workers 2]``.

Copies ``tests/data/transcripts`` (42 trials, 1.8 MB) ``--copies`` times into a temp
folder in the published layout ``<model>/<task>-t<N>.json``, warms the page cache, then
measures in the same run:

* baseline: a plain ``json.load`` loop over every file (one process, parsing only);
* ``ingest`` (parse + flatten + Parquet) with 1 worker and with ``--workers`` workers;

and prints files/s, MB/s, the ratios to the baseline, peak memory, and an extrapolation to
the full published corpus (56,037 files, 2.2 GB; target <= 60 s on 2 cores).
"""

from __future__ import annotations

import argparse
import json
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
TARGET_S = 60.0


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


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


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
        print(f"corpus: {files:,} files, {mb:,.1f} MB (mean {nbytes / files / 1e3:.1f} KB/file)")
        base_s, _ = timed(json_load_loop, paths)
        rows = [("json.load loop (baseline, 1 process)", base_s)]
        for workers in sorted({1, args.workers}):
            seconds, stats = timed(ingest, [tree], Path(tmp) / f"out-{workers}.parquet", workers=workers)
            assert stats.rows == files, (stats.rows, files)
            rows.append((f"apiflow ingest, {workers} worker(s)", seconds))
        print(
            f"{'':40s} {'seconds':>8s} {'files/s':>9s} {'MB/s':>7s} {'vs baseline':>12s} {'2.2 GB corpus':>14s}"
        )
        for name, seconds in rows:
            extrapolated = CORPUS_BYTES / (nbytes / seconds)
            print(
                f"{name:40s} {seconds:8.2f} {files / seconds:9,.0f} {mb / seconds:7.1f} "
                f"{base_s / seconds:11.2f}x {extrapolated:12.1f} s"
            )
        best = min(seconds for name, seconds in rows[1:])
        verdict = "meets" if CORPUS_BYTES / (nbytes / best) <= TARGET_S else "MISSES"
        print(
            f"best ingest extrapolates to {CORPUS_BYTES / (nbytes / best):.1f} s for 2.2 GB: {verdict} the {TARGET_S:.0f} s target"
        )
        peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
        peak_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e3
        print(f"peak RSS: driver {peak_self:.0f} MB, largest worker {peak_children:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
