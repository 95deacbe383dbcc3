"""``apiflow bank verify|stats``: check a bank's integrity and describe its shape."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from apiflow.bank.loader import DEFAULT_BANK, load_bank
from apiflow.bank.manifest import verify_manifest
from apiflow.errors import UsageError


def _verify(args: argparse.Namespace) -> int:
    root = Path(args.bank)
    if not root.is_dir():
        raise UsageError(f"bank folder {root} does not exist")
    manifest, problems = verify_manifest(root)
    for problem in problems:
        print(f"FAIL manifest  {problem}")
    if problems:
        print(f"bank {root}: REFUSED ({len(problems)} problem(s))")
        return 1
    print(f"ok   manifest  {len(manifest['files'])} files match")  # type: ignore[arg-type]
    bank = load_bank(root)
    print(f"ok   load      {len(bank.worlds)} world(s), {len(bank.tasks)} task(s)")
    print(f"bank {bank.name} {bank.hash}: VERIFIED")
    return 0


def _stats(args: argparse.Namespace) -> int:
    bank = load_bank(args.bank)
    print(f"bank {bank.name}  hash {bank.hash[:16]}  worlds {len(bank.worlds)}  tasks {len(bank.tasks)}")
    tasks = list(bank.tasks.values())
    for title, counts in (
        ("world", Counter(t.world for t in tasks)),
        ("kind", Counter(t.kind for t in tasks)),
        ("axis (solo)", Counter(t.axis or "-" for t in tasks if t.kind == "solo")),
        ("difficulty (solo)", Counter(t.difficulty or "-" for t in tasks if t.kind == "solo")),
        ("chain length", Counter(t.length for t in tasks if t.kind == "chain")),
    ):
        print(f"{title}: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bank verify`` and ``bank stats``."""
    bank = sub.add_parser("bank", help="verify and describe task banks")
    verbs = bank.add_subparsers(dest="bank_verb", metavar="VERB", parser_class=type(bank))
    verify = verbs.add_parser("verify", help="re-check a bank's manifest and load every task")
    verify.add_argument("bank", nargs="?", default=str(DEFAULT_BANK))
    verify.set_defaults(func=_verify)
    stats = verbs.add_parser("stats", help="tasks per world, axis, difficulty and chain length")
    stats.add_argument("bank", nargs="?", default=str(DEFAULT_BANK))
    stats.set_defaults(func=_stats)
