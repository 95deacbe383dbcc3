"""The ``apiflow`` command: one table of verbs, one module a verb.

Bad input raises ``UsageError`` anywhere below and ends here as one line on stderr
with exit code 2; so does an OS or object-store error about the user's own paths and
URLs (``plain_message``). Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from apiflow.cli import bank, grid, panel, regrade, report, run, task, transcripts, view, world
from apiflow.errors import UsageError, one_line_errors
from apiflow.version import __version__

# The verbs, in the order ``apiflow --help`` lists them: each module adds its verb with
# ``register(subparsers)`` and ``set_defaults(func=...)``.
VERBS: tuple[tuple[str, ModuleType], ...] = (
    ("task", task),
    ("run", run),
    ("bank", bank),
    ("regrade", regrade),
    ("transcripts", transcripts),
    ("report", report),
    ("panel", panel),
    ("grid", grid),
    ("world", world),
    ("view", view),
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's own usage errors: one line, exit 2, like every other bad input.
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every verb registered."""
    parser = _Parser(prog="apiflow", description="Evaluate LLM agents on long, dependent REST-API workflows.")
    parser.add_argument("--version", action="version", version=f"apiflow {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for _name, module in VERBS:
        module.register(sub)
    return parser


def entry() -> int:
    """The ``apiflow`` console script (and ``python -m apiflow.cli``): ``main`` in a process of its own,
    whose garbage collector the long verbs may tune (``apiflow.agent.heap``)."""
    return main(own_process=True)


def main(argv: Sequence[str] | None = None, *, own_process: bool = False) -> int:
    """Run one verb. ``own_process``: the process is this command's alone (the console script), so a
    verb may tune its garbage collector; a caller that embeds the CLI (tests, notebooks) keeps its own."""
    state: dict[str, Any] = {}

    def run() -> int:
        parser = build_parser()
        args = state["args"] = parser.parse_args(argv)
        args.own_process = own_process
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)

    try:
        return one_line_errors(run, sys.argv[1:] if argv is None else argv, lambda: state.get("args"))
    except KeyboardInterrupt:
        print("apiflow: interrupted", file=sys.stderr)
        return 130
