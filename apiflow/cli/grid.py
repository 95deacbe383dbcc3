"""``apiflow grid run|status|verify|compact``: the grid runner's verbs.

``apiflow`` never imports ``cluster`` or ``ray`` at module level (a test walks the imports):
``run`` and ``status`` load ``cluster`` by name with ``importlib`` only when invoked, so every
other verb works without Ray installed, and ``compact`` needs nothing beyond the result store
(docs/design/040-grid-runner.md).
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from apiflow.errors import UsageError
from apiflow.results.storage import check_output, storage_options

_CLUSTER_HINT = "the grid runner needs the cluster extra: pip install 'apiflow[cluster]'"


def _cluster(module: str) -> Any:
    try:
        return importlib.import_module(f"cluster.{module}")
    except ModuleNotFoundError as exc:
        if exc.name in ("ray", "cluster"):
            raise UsageError(_CLUSTER_HINT) from None
        raise


def _run(args: argparse.Namespace) -> int:
    return int(_cluster("driver").run_from_args(args))


def _status(args: argparse.Namespace) -> int:
    for line in _cluster("status").grid_status(args.out, storage_options(args.storage_options)):
        print(line)
    return 0


def _verify(args: argparse.Namespace) -> int:
    lines, whole = _cluster("verify").grid_verify(args.out, storage_options(args.storage_options))
    for line in lines:
        print(line)
    return 0 if whole else 3


def _compact(args: argparse.Namespace) -> int:
    from apiflow.results.store import ResultStore

    store = ResultStore(args.out, storage_options(args.storage_options))
    if store.read_manifest() is None:
        raise UsageError(f"{args.out} holds no grid (no manifest.json)")
    check_output(args.out, flag=None)
    summary = store.compact()
    print(
        f"compacted {summary.rows_read} rows into {summary.trials} trials, {len(summary.files)} per-model files"
    )
    return 0


def register(subparsers: Any) -> None:
    """Add ``grid run``, ``grid status``, ``grid verify`` and ``grid compact``."""
    grid = subparsers.add_parser(
        "grid", help="run, resume and inspect grids of trials (models x tasks x epochs)"
    )
    verbs = grid.add_subparsers(dest="grid_verb", metavar="{run,status,verify,compact}", parser_class=type(grid))
    run = verbs.add_parser("run", help="run or resume a grid (local Ray by default, or --address)")
    add_run_flags(run)
    run.set_defaults(func=_run)
    status = verbs.add_parser("status", help="done / remaining / failed by model, and spend")
    status.add_argument("out", help="the grid's output URL (folder or s3://...)")
    status.add_argument("--storage-options", help="fsspec options as JSON (e.g. an S3 endpoint)")
    status.set_defaults(func=_status)
    verify = verbs.add_parser(
        "verify", help="hold the store against the plan: rows, transcripts, duplicates, checksums"
    )
    verify.add_argument("out", help="the grid's output URL (folder or s3://...)")
    verify.add_argument("--storage-options", help="fsspec options as JSON (e.g. an S3 endpoint)")
    verify.set_defaults(func=_verify)
    compact = verbs.add_parser("compact", help="merge per-trial rows into one Parquet file per model")
    compact.add_argument("out", help="the grid's output URL (folder or s3://...)")
    compact.add_argument("--storage-options", help="fsspec options as JSON (e.g. an S3 endpoint)")
    compact.set_defaults(func=_compact)


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The run flags (GRID.yaml, --out, --address, --budget-usd, --dry-run, --no-progress, --retry-unscored,
    the selection, --extend, --question/--level, --verbose).

    Defined here once; ``python -m cluster.driver`` imports it (cluster may import apiflow,
    never the reverse), so both entry points take exactly the same flags.
    """
    parser.add_argument("grid", help="grid YAML (configs/grids/*.yaml)")
    parser.add_argument("--out", help="output URL: local folder or s3://bucket/prefix (default: the grid's)")
    parser.add_argument(
        "--address", help="Ray address: auto, host:port or ray://...; default: a private local Ray"
    )
    parser.add_argument("--budget-usd", type=float, help="spend cap in USD (default: the grid's)")
    parser.add_argument("--dry-run", action="store_true", help="plan and estimate only")
    parser.add_argument("--no-progress", action="store_true", help="no live progress display")
    parser.add_argument(
        "--retry-unscored",
        action="store_true",
        help="also run the trials left unscored, final (the grid's max_unscored_attempts unscored attempts)",
    )
    parser.add_argument("--models", help="run only these of the grid's models (ids or slugs, comma-separated)")
    parser.add_argument("--tasks", help="run only these task ids (comma-separated)")
    parser.add_argument("--epochs", type=int, help="run only epochs 1..N of the grid's")
    parser.add_argument(
        "--extend",
        action="store_true",
        help="the output holds a grid this one extends (more epochs, models or tasks): run only the new trials",
    )
    parser.add_argument(
        "--question",
        metavar="ASK",
        help="run an adaptive sweep that stops when this is settled: rank:K, better:A,B[,margin] or width:W "
        "(default: the grid's question:, if any; docs/design/051)",
    )
    parser.add_argument(
        "--level", type=float, help="the confidence the question's answer holds at (default: the grid's, or 0.9)"
    )
    parser.add_argument(
        "--step", type=float, help="each wave adds this fraction of the plan's units per open model (default 0.05)"
    )
    parser.add_argument(
        "--each",
        action="store_true",
        help="hold each statement (a pair's order, a rate) at --level on its own, not jointly",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="also print where the time and CPU went (phases, actors, memos)"
    )
