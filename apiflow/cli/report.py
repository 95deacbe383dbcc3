"""``apiflow report``: leaderboard statistics, tables and figures from trial results."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from apiflow.analysis.panels import PANELS
from apiflow.analysis.report import build_report
from apiflow.analysis.summary import ReportOptions
from apiflow.analysis.writers import print_leaderboard
from apiflow.errors import UsageError
from apiflow.results.storage import check_output


def register(subparsers: Any) -> None:
    """Add the ``report`` verb to the ``apiflow`` parser."""
    rep = subparsers.add_parser(
        "report", help="leaderboard statistics, tables and figures from trial results"
    )
    rep.add_argument("inputs", nargs="+", metavar="INPUT",
                     help="Parquet file, folder of Parquet files (local or s3://), or folder of trial JSONs")  # fmt: skip
    rep.add_argument("--out", required=True, metavar="DIR", help="output folder")
    rep.add_argument("--panel", default=None, help=f"restrict to one published panel ({', '.join(PANELS)})")
    rep.add_argument(
        "--models", nargs="+", default=None, metavar="MODEL", help="restrict to these model slugs"
    )
    rep.add_argument(
        "--bootstrap", type=int, default=10_000, metavar="N", help="world-bootstrap resamples (default 10000)"
    )
    rep.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    rep.add_argument("--count-unscored", action="store_true",
                     help="keep unscored/harness trials in denominators (published leaderboard convention)")  # fmt: skip
    rep.add_argument("--prices", default=None, metavar="FILE",
                     help="price table YAML; given: every trial is re-priced from its tokens")  # fmt: skip
    rep.add_argument("--screen-eval", default=None, metavar="FILE",
                     help="screen_eval.json of `apiflow bank screen-eval`: append its section and plot")  # fmt: skip
    rep.add_argument(
        "--json", action="store_true", help="print summary.json to stdout instead of the leaderboard"
    )
    rep.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from apiflow.results.prices import DEFAULT_PRICE_TABLE, load_price_table

    if args.bootstrap < 0:
        raise UsageError("--bootstrap must be >= 0")
    check_output(args.out)
    prices = load_price_table(args.prices or DEFAULT_PRICE_TABLE)
    options = ReportOptions(
        bootstrap=args.bootstrap, seed=args.seed, prices=prices, reprice=args.prices is not None
    )
    summary, files = build_report(
        args.inputs, Path(args.out), panel=args.panel, models=args.models,
        count_unscored=args.count_unscored, options=options, screen_eval=args.screen_eval,
    )  # fmt: skip
    if args.json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
    else:
        print_leaderboard(summary)
        print(
            f"wrote {files.summary}, {files.leaderboard}, {files.html} and {len(files.figures)} figures",
            file=sys.stderr,
        )
    return 0
