"""The ``apiflow`` command: one thin dispatcher; each package registers its own verbs.

Bad input raises ``UsageError`` anywhere below and ends here as one line on stderr
with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from apiflow.errors import UsageError

# Modules exposing ``register(subparsers)``; each adds its verbs with ``set_defaults(func=...)``.
# Named here rather than imported at the top so that each package owns its verbs and this
# dispatcher stays a list.
_VERB_MODULES = (
    "apiflow.bank.cli",
    "apiflow.agent.cli",
    "apiflow.grading.cli",
    "apiflow.analysis.cli",
    "apiflow.panel.cli",
    "apiflow.gridcli",
    "apiflow.serve.cli",
    "apiflow.viewer.cli",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's own usage errors: one line, exit 2, like every other bad input.
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every available verb registered."""
    parser = _Parser(prog="apiflow", description="Evaluate LLM agents on long, dependent REST-API workflows.")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for name in _VERB_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``apiflow`` console script."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"apiflow: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("apiflow: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
