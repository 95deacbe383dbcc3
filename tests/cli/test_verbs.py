"""The command's surface: the verbs ``apiflow --help`` lists (a snapshot), help text on every flag,
and ``--version``."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from apiflow.cli import VERBS, build_parser, main
from apiflow.version import __version__

SNAPSHOT = Path(__file__).with_name("help.txt")


def _help_text() -> str:
    # A fixed width: argparse wraps to the terminal's.
    out = subprocess.run(
        [sys.executable, "-m", "apiflow.cli", "--help"],
        capture_output=True, text=True, check=True, timeout=120, env={"COLUMNS": "100", "PATH": ""},
    )  # fmt: skip
    return out.stdout


def test_help_lists_the_verbs_of_the_snapshot() -> None:
    assert _help_text() == SNAPSHOT.read_text(encoding="utf-8")


def test_the_table_is_what_the_parser_has() -> None:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(sub.choices) == [name for name, _ in VERBS]


def _actions(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _actions(child, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield path, action


def test_every_argument_has_help_text() -> None:
    bare = [f"{path}: {a.option_strings or a.dest}" for path, a in _actions(build_parser(), "apiflow") if not a.help]
    assert bare == []


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"apiflow {__version__}"
