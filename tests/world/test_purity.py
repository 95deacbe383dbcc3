"""Worlds stay pure: no wall clock, no global randomness, no uuid4, no I/O under apiflow/world/."""

from __future__ import annotations

import ast
from pathlib import Path

WORLD_DIR = Path(__file__).resolve().parents[2] / "apiflow" / "world"
BANNED_MODULES = {"time", "random", "uuid", "socket", "os", "subprocess", "requests", "httpx", "urllib.request", "secrets"}
BANNED_CALLS = {"now", "utcnow", "today", "open", "uuid4", "getrandbits", "urandom"}


def violations(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name in BANNED_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module in BANNED_MODULES:
            found.append(f"from {node.module} import …")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in BANNED_CALLS:
                found.append(f"call {name}() at line {node.lineno}")
    return found


def test_world_package_is_pure() -> None:
    problems = {p.name: violations(p.read_text()) for p in WORLD_DIR.glob("*.py")}
    assert {k: v for k, v in problems.items() if v} == {}


def test_the_check_catches_impurity() -> None:
    assert violations("import time\nx = time.time()") == ["import time"]
    assert violations("from datetime import datetime\nd = datetime.now()") == ["call now() at line 2"]
    assert violations("import uuid\nuuid.uuid4()") == ["import uuid", "call uuid4() at line 2"]
    assert violations("import random\nrandom.random()") == ["import random"]
