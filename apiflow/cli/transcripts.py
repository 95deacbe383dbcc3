"""``apiflow transcripts ingest|export|unpack``: trial transcripts in and out of apiflow's layouts."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from apiflow.analysis.ingest import ingest
from apiflow.errors import UsageError
from apiflow.interop.export import export_inspect, iter_trials
from apiflow.results.storage import check_output
from apiflow.results.storage import storage_options as storage_options_arg


def register(subparsers: Any) -> None:
    """Add the ``transcripts`` verb to the ``apiflow`` parser."""
    transcripts = subparsers.add_parser("transcripts", help="work with schema-1.0 trial transcripts")
    verbs = transcripts.add_subparsers(
        dest="transcripts_verb", metavar="VERB", parser_class=type(transcripts)
    )
    ing = verbs.add_parser("ingest", help="flatten a tree of trial JSONs into one Parquet table")
    ing.add_argument(
        "dirs",
        nargs="+",
        metavar="DIR",
        help="folders (or files) of trial JSONs, e.g. <model>/<task>-t<N>.json, or .eval logs "
        "written by `transcripts export`",
    )
    ing.add_argument("--out", required=True, metavar="FILE.parquet", help="Parquet file to write")
    ing.add_argument("--workers", type=int, default=0, help="parser processes (default: all cores)")
    ing.set_defaults(func=_ingest)
    exp = verbs.add_parser("export", help="write trial records as Inspect AI .eval logs")
    exp.add_argument(
        "--format", required=True, choices=["inspect"], help="log format (inspect: Inspect AI .eval)"
    )
    exp.add_argument("results", metavar="RESULTS",
                     help="what `grid run` wrote (local or s3://) or a folder of trial JSONs")  # fmt: skip
    exp.add_argument("out", metavar="OUT",
                     help="OUT.eval (one model on one bank) or a folder: one <model>_<bank>.eval each")  # fmt: skip
    exp.add_argument(
        "--model", nargs="+", default=None, metavar="MODEL", help="export only these model slugs"
    )
    exp.add_argument("--storage-options", help="fsspec options as JSON (e.g. an S3 endpoint)")
    exp.set_defaults(func=_export)
    unpack = verbs.add_parser(
        "unpack", help="write a grid's archived transcripts as one file a trial (transcripts/model=<m>/)"
    )
    unpack.add_argument("results", metavar="RESULTS", help="what `grid run` wrote (local or s3://)")
    unpack.add_argument("--storage-options", help="fsspec options as JSON (e.g. an S3 endpoint)")
    unpack.set_defaults(func=_unpack)
    transcripts.set_defaults(func=lambda args: _missing_verb(transcripts))


def _missing_verb(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _ingest(args: argparse.Namespace) -> int:
    if not args.out.endswith(".parquet"):
        raise UsageError("--out must name a .parquet file")
    if args.workers < 0:
        raise UsageError("--workers must be >= 0")
    check_output(args.out, folder=False)
    start = time.perf_counter()
    stats = ingest(args.dirs, args.out, workers=args.workers)
    seconds = time.perf_counter() - start
    print(
        f"ingested {stats.files:,} trial files ({stats.bytes / 1e6:,.1f} MB) -> {args.out} "
        f"({stats.rows:,} rows) in {seconds:.1f} s",
        file=sys.stderr,
    )
    return 0


def _export(args: argparse.Namespace) -> int:
    check_output(args.out, folder=not args.out.endswith(".eval"), flag=None)
    start = time.perf_counter()
    trials = iter_trials(args.results, storage_options_arg(args.storage_options))
    logs = export_inspect(trials, args.out, models=args.model)
    seconds = time.perf_counter() - start
    for log in logs:
        print(f"{log.path}  {log.model} on {log.bank}: {log.trials:,} samples ({log.unscored:,} unscored)")
    total = sum(log.trials for log in logs)
    print(f"exported {total:,} trials into {len(logs)} Inspect log(s) in {seconds:.1f} s", file=sys.stderr)
    return 0


def _unpack(args: argparse.Namespace) -> int:
    from apiflow.results.store import ResultStore

    store = ResultStore(args.results, storage_options_arg(args.storage_options))
    if store.read_manifest() is None:
        raise UsageError(f"{args.results}: not a grid's result folder (no manifest.json)")
    check_output(args.results, flag=None)
    written, skipped = store.unpack_archives()
    print(f"wrote {written:,} transcript files under {args.results}/transcripts/model=*/"
          + (f" ({skipped:,} later copies of a trial skipped)" if skipped else ""), file=sys.stderr)  # fmt: skip
    return 0
