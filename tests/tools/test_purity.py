"""The tools stay deterministic: no wall clock, no uuid, no module-level random."""

from __future__ import annotations

import ast
from pathlib import Path

import apiflow.tools

BANNED_CALLS = {
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("uuid", "uuid1"),
    ("uuid", "uuid4"),
}
RANDOM_ALLOWED = {"Random"}


def _violations(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            pair = (node.value.id, node.attr)
            if pair in BANNED_CALLS or (node.value.id == "random" and node.attr not in RANDOM_ALLOWED):
                found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module in ("uuid", "time"):
            found.append(f"{path.name}:{node.lineno} from {node.module} import ...")
    return found


def test_no_wall_clock_uuid_or_global_random_in_tools() -> None:
    package = Path(apiflow.tools.__file__).parent
    files = sorted(package.glob("*.py"))
    assert len(files) >= 8
    assert [v for f in files for v in _violations(f)] == []
