"""Report time on the published 56k-row table with 10,000 world-bootstrap resamples.

One command: ``.venv/bin/python bench/bench_report.py [--bootstrap 10000] [--panel PANEL]``.

Measures, in the same run:

* baseline: a naive cluster bootstrap of ONE statistic (the pooled pass rate) that rebuilds
  each resample from the trial rows of the drawn worlds (a Python loop over resamples, numpy
  inside), timed on 200 resamples and scaled to ``--bootstrap``;
* ``apiflow report`` phases: load + classify, every statistic with ``--bootstrap`` resamples
  (several hundred bootstrapped quantities), figures + summary.json + leaderboard.md + report.html;

and prints seconds and the ratio of the naive one-statistic bootstrap to the full report
(target: full report <= 10 s).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apiflow.analysis.report import build_report  # noqa: E402
from apiflow.analysis.summary import ReportOptions, summarize  # noqa: E402
from apiflow.analysis.table import load_table  # noqa: E402
from apiflow.analysis.trials import select_rows, trials_from_table  # noqa: E402
from apiflow.results.prices import load_price_table  # noqa: E402

TABLE = ROOT / "configs" / "panels" / "published-trials.parquet"
TARGET_S = 10.0
NAIVE_RESAMPLES = 200


def naive_bootstrap(
    world: np.ndarray, passed: np.ndarray, counted: np.ndarray, b: int, seed: int
) -> np.ndarray:
    """Pooled pass rate, one resample at a time, gathering the drawn worlds' trials."""
    rng = np.random.default_rng(seed)
    worlds = np.unique(world)
    members = {w: np.flatnonzero(world == w) for w in worlds}
    out = np.empty(b)
    for i in range(b):
        drawn = rng.choice(worlds, size=len(worlds), replace=True)
        rows = np.concatenate([members[w] for w in drawn])
        out[i] = passed[rows].sum() / counted[rows].sum()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", type=int, default=10_000)
    parser.add_argument("--panel", default=None, help="restrict to a panel (default: all 56,037 trials)")
    args = parser.parse_args()
    prices = load_price_table()

    start = time.perf_counter()
    table = select_rows(load_table([str(TABLE)]), panel=args.panel)
    trials = trials_from_table(table)
    load_s = time.perf_counter() - start

    start = time.perf_counter()
    naive_bootstrap(trials.world, trials.passed, trials.counted, NAIVE_RESAMPLES, seed=0)
    naive_s = (time.perf_counter() - start) * args.bootstrap / NAIVE_RESAMPLES

    start = time.perf_counter()
    summary = summarize(trials, ReportOptions(bootstrap=args.bootstrap, prices=prices))
    stats_s = time.perf_counter() - start

    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        start = time.perf_counter()
        build_report(
            [str(TABLE)],
            Path(tmp),
            panel=args.panel,
            options=ReportOptions(bootstrap=args.bootstrap, prices=prices),
        )
        total_s = time.perf_counter() - start

    print(
        f"table: {trials.n:,} trials, {len(trials.models)} models, {len(trials.worlds)} worlds; B = {args.bootstrap:,}"
    )
    print(f"{'load + classify':48s} {load_s:7.2f} s")
    print(f"{'all statistics incl. bootstrap':48s} {stats_s:7.2f} s")
    print(f"{'full report (load, stats, 4 figures, 3 files)':48s} {total_s:7.2f} s")
    print(
        f"{'baseline: naive bootstrap of ONE statistic':48s} {naive_s:7.2f} s  (200 resamples timed, scaled to B)"
    )
    print(f"naive one-statistic bootstrap / our whole statistics pass: {naive_s / stats_s:.1f}x")
    ci = summary["pass_rates"]["all"]["ci90"]
    print(f"pooled pass rate {summary['pass_rates']['all']['rate']:.4f}, 90% CI [{ci[0]:.4f}, {ci[1]:.4f}]")
    verdict = "meets" if total_s <= TARGET_S else "MISSES"
    print(f"full report {total_s:.2f} s: {verdict} the {TARGET_S:.0f} s target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
