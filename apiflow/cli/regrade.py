"""``apiflow regrade PATH... [--json OUT] [--bank BANK] [--canary-key KEY]``: regrade transcripts and
compare verdicts (with a canary key or a bank: ``apiflow.agent.bank_regrade``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from apiflow.errors import UsageError
from apiflow.grading.regrade import MAX_DISAGREEMENTS_SHOWN, RegradeSummary, regrade
from apiflow.grading.rules import RULE_SETS


def register(subparsers: Any) -> None:
    """Add the ``regrade`` verb."""
    parser = subparsers.add_parser(
        "regrade",
        help="regrade schema-1.0 transcripts and compare with their recorded verdicts",
        description="Rebuild each trial's evidence from its messages, grade it against the predicates recorded "
        "in its verifier payload, and report agreement with the recorded verdict and G1/G2 flags.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="trial JSON files or folders of them")
    parser.add_argument(
        "--json", dest="json_out", metavar="OUT", help="also write the summary as JSON to OUT"
    )
    parser.add_argument(
        "--rules",
        default=None,
        choices=sorted(RULE_SETS),
        help="rule set (default: the one each record names, published-1.0 for published transcripts)",
    )
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    parser.add_argument(
        "--bank",
        default=None,
        help="grade each trial against this bank's spec of its task (checkpoints and constraints too), "
        "in the trial's own canary forms, instead of its recorded predicates (one process)",
    )
    parser.add_argument(
        "--canary-key",
        default=None,
        metavar="KEY",
        help="the canary key the records were salted with: a key file or the results folder holding "
        "_secret/canary.key; each record's canary_key_id must match it (needed with --bank for records "
        "that name a key)",
    )
    parser.set_defaults(func=handle)


def _ratio(count: int, total: int) -> str:
    return f"{count}/{total} ({100.0 * count / total:.3f}%)" if total else f"{count}/0"


def render(summary: RegradeSummary, seconds: float) -> str:
    """The human-readable report."""
    n = summary.determinable
    lines = [
        f"trials read     {summary.files}",
        f"unscored        {summary.unscored}",
        f"determinable    {n}",
        f"indeterminate   {summary.indeterminate}",
        f"unreadable      {summary.errors}",
        f"verdict agree   {_ratio(summary.verdict_agree, n)}",
        f"G1 agree        {_ratio(summary.g1_agree, n)}",
        f"G2 agree        {_ratio(summary.g2_agree, n)}",
        f"disagreements   {len(summary.disagreements)}",
    ]
    for item in sorted(summary.disagreements, key=lambda d: d["path"])[:MAX_DISAGREEMENTS_SHOWN]:
        rec, ours = item["recorded"], item["ours"]
        lines.append(
            f"  {item['path']}: recorded {rec['verdict']} (G1 {rec['g1']}, G2 {rec['g2']}), "
            f"ours {ours['verdict']} (G1 {ours['g1']}, G2 {ours['g2']}); first differing predicate: "
            f"{item['predicate']}"
        )
    if len(summary.disagreements) > MAX_DISAGREEMENTS_SHOWN:
        lines.append(f"  … {len(summary.disagreements) - MAX_DISAGREEMENTS_SHOWN} more (see --json)")
    for item in sorted(summary.unsettled, key=lambda d: d["path"])[:MAX_DISAGREEMENTS_SHOWN]:
        lines.append(f"  indeterminate {item['path']}: {', '.join(item['predicates'])}")
    for item in sorted(summary.failures, key=lambda d: d["path"])[:MAX_DISAGREEMENTS_SHOWN]:
        lines.append(f"  unreadable {item['path']}: {item['error']}")
    mb = summary.bytes / 1e6
    rate = f"{summary.files / seconds:.0f} files/s, {mb / seconds:.1f} MB/s" if seconds > 0 else ""
    lines.append(f"elapsed         {seconds:.2f} s ({mb:.1f} MB; {rate})")
    return "\n".join(lines)


def _keyed(args: argparse.Namespace) -> RegradeSummary:
    """The regrade that checks each record's canary key (and, with ``--bank``, rebuilds its spec)."""
    from apiflow.agent.bank_regrade import regrade_with_key
    from apiflow.bank import load_bank
    from apiflow.results.canary_key import read_key

    key = read_key(args.canary_key) if args.canary_key is not None else None
    bank = load_bank(args.bank) if args.bank is not None else None
    return regrade_with_key(args.paths, key=key, bank=bank, rules=args.rules)


def handle(args: argparse.Namespace) -> int:
    """Run the regrade; exit 0 when every determinable scored trial agrees, 1 otherwise."""
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.json_out and Path(args.json_out).is_dir():
        raise UsageError(f"--json {args.json_out}: is a folder")
    start = time.perf_counter()
    if args.bank is not None or args.canary_key is not None:
        summary = _keyed(args)
    else:
        summary = regrade(args.paths, rules=args.rules, workers=args.workers)
    seconds = time.perf_counter() - start
    try:
        print(render(summary, seconds), flush=True)
    except BrokenPipeError:  # `apiflow regrade … | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if args.json_out:
        try:
            Path(args.json_out).write_text(json.dumps(summary.to_json(), indent=2, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise UsageError(f"cannot write {args.json_out}: {exc.strerror}") from None
    return 0 if not summary.disagreements else 1
