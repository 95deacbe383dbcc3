"""Imports point down: apiflow never imports cluster or ray; litellm lives in exactly one module."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def by_module() -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): imported_modules(p) for p in (ROOT / "apiflow").rglob("*.py")}


def test_apiflow_never_imports_cluster_or_ray() -> None:
    offenders = {m: i & {"cluster", "ray"} for m, i in by_module().items() if i & {"cluster", "ray"}}
    assert offenders == {}


def test_litellm_is_imported_in_exactly_one_module() -> None:
    users = sorted(m for m, i in by_module().items() if "litellm" in i)
    assert len(users) <= 1, users


def test_world_imports_nothing_else_from_apiflow() -> None:
    for path in (ROOT / "apiflow" / "world").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("apiflow."):
                assert node.module.startswith("apiflow.world"), f"{path.name} imports {node.module}"


def test_ray_is_imported_only_by_the_actors_and_the_driver() -> None:
    """Planning, budget, rate limits, the trial runner and `grid status` work without Ray
    (tests/cluster/test_without_ray.py runs the last two where `import ray` fails)."""
    users = sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "cluster").rglob("*.py") if "ray" in imported_modules(p)
    )
    assert users == ["cluster/actors.py", "cluster/driver.py", "cluster/session.py"]


def test_no_library_path_points_into_tests() -> None:
    """A default the library reads must exist in an install too: nothing under ``apiflow/`` or
    ``cluster/`` names a path in ``tests/``."""
    found = []
    for path in sorted([*(ROOT / "apiflow").rglob("*.py"), *(ROOT / "cluster").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value == "tests" or node.value.startswith("tests/"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_tests_do_not_import_benchmark_scripts() -> None:
    """What tests and benchmarks share lives in a package both import (``apiflow.testing``,
    ``cluster.chaos``), not in a script a test reaches by putting ``bench/`` on ``sys.path``."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            func = node.func if isinstance(node, ast.Call) else None
            if not (isinstance(func, ast.Attribute) and ast.unparse(func.value) == "sys.path"):
                continue
            if any(isinstance(n, ast.Constant) and "bench" in str(n.value) for n in ast.walk(node)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
