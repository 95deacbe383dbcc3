"""Verb ``apiflow view RESULTS --out SITE``: the static transcript viewer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from apiflow.errors import UsageError
from apiflow.results.storage import check_output
from apiflow.results.storage import storage_options as storage_options_arg


def register(subparsers) -> None:
    """Add ``view`` to the top-level parser."""
    view = subparsers.add_parser(
        "view",
        help="a static site of every trial (leaderboard, model, task, trial pages) that opens from disk",
    )
    view.add_argument("results", metavar="RESULTS",
                      help="a grid's output (folder or s3://...), a folder of trial JSONs, or one trial JSON")  # fmt: skip
    view.add_argument(
        "--out", required=True, metavar="SITE", help="site folder (new, empty, or an earlier site)"
    )
    view.add_argument("--prices", default=None, metavar="FILE",
                      help="price table YAML; given: every trial is re-priced from its tokens")  # fmt: skip
    view.add_argument("--workers", type=int, default=0, help="rendering processes (default: all cores)")
    view.add_argument("--storage-options", help="fsspec options as JSON (e.g. an S3 endpoint)")
    view.set_defaults(func=_view)


def _view(args: argparse.Namespace) -> int:
    from apiflow.results.prices import DEFAULT_PRICE_TABLE, load_price_table
    from apiflow.viewer.build import build_site

    if args.workers < 0:
        raise UsageError("--workers must be >= 0")
    check_output(args.out)
    prices = load_price_table(args.prices or DEFAULT_PRICE_TABLE)
    stats = build_site(
        args.results, Path(args.out), prices, reprice=args.prices is not None,
        storage_options=storage_options_arg(args.storage_options), workers=args.workers,
    )  # fmt: skip
    print(
        f"wrote {stats.pages:,} pages ({stats.trials:,} trials, {stats.models} models, {stats.tasks:,} model x task) "
        f"-> {stats.out} ({stats.bytes / 1e6:,.1f} MB) in {stats.seconds:.1f} s; open {stats.out / 'index.html'}",
        file=sys.stderr,
    )
    return 0
