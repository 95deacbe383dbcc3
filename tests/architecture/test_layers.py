"""The layer contract (docs/design/003-layers.md): every import inside ``apiflow`` points down or
sideways in this table, and no two modules import each other, directly or around a loop.

Every import counts: module-level, in-function, relative, and ``TYPE_CHECKING`` ones (a type-only
edge is still an edge a reader must follow). The last tests plant an upward import and a cycle in a
copy of the tree and check that the walk reports both, so the contract cannot pass by seeing nothing.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAYERS: tuple[tuple[str, ...], ...] = (
    ("world", "errors", "hashing", "version", "redact", "exact", "resources"),
    ("tools", "results"),
    ("grading", "interop"),
    ("bank", "analysis"),
    ("models",),
    ("agent",),
    ("runner", "mcp", "testing"),
    ("authoring", "serve", "api", "panel", "viewer"),
    ("cli",),
    ("",),  # the package itself: ``apiflow/__init__.py`` (version, lazy notebook API)
)
"""Low to high. A module's layer is that of its first name under ``apiflow``; a package's
``__init__`` is in its package's layer."""

RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted((root / "apiflow").rglob("*.py"))}


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The ``apiflow`` modules ``name`` imports, each resolved to the longest known module name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from apiflow.x import y`` imports the module ``apiflow.x.y`` when there is one, else a
            # name of ``apiflow.x``.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("apiflow") and target != name:
                found.add(target)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            if RANK[layer_of(target)] > RANK[layer_of(source)]:
                found.append(f"{source} -> {target} ({layer_of(source) or 'apiflow'} is below {layer_of(target)})")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_every_package_has_a_layer() -> None:
    unplaced = sorted({layer_of(m) for m in import_graph(ROOT)} - set(RANK))
    assert unplaced == [], f"add these to LAYERS (and docs/design/003-layers.md): {unplaced}"


def test_no_import_points_up() -> None:
    assert upward_imports(import_graph(ROOT)) == []


def test_no_modules_import_each_other() -> None:
    assert cycles(import_graph(ROOT)) == []


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "apiflow", tmp_path / "apiflow", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_planted_upward_import_is_reported(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    target = root / "apiflow" / "world" / "http.py"
    # In a function and relative, the two forms a module-level walk would miss.
    target.write_text(target.read_text() + "\n\ndef _late():\n    from ..cli import main\n    return main\n")
    assert upward_imports(import_graph(root)) == [
        "apiflow.world.http -> apiflow.cli (world is below cli)"
    ]


def test_a_planted_cycle_is_reported(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "apiflow" / "tools" / "ping.py").write_text("from apiflow.tools import pong\n")
    (root / "apiflow" / "tools" / "pong.py").write_text("def f():\n    import apiflow.tools.ping\n")
    assert upward_imports(import_graph(root)) == []
    assert cycles(import_graph(root)) == [["apiflow.tools.ping", "apiflow.tools.pong"]]


def test_nothing_in_the_library_imports_the_test_machinery() -> None:
    graph = import_graph(ROOT)
    users = sorted(
        source
        for source, targets in graph.items()
        if layer_of(source) != "testing" and any(layer_of(t) == "testing" for t in targets)
    )
    assert users == []


def test_no_private_name_is_imported_across_packages() -> None:
    found = []
    for name, path in modules(ROOT).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("apiflow"):
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private and layer_of(node.module) != layer_of(name):
                    found.append(f"{name}: from {node.module} import {', '.join(private)}")
    assert found == []


def test_trials_are_played_only_by_the_runner() -> None:
    """``run_trial`` is called from ``apiflow.runner`` alone; every other caller (the CLI, the notebook
    API, panels, screen-eval, gates, MCP serving, the grid's actors) goes through the runner."""
    callers = []
    for path in sorted([*(ROOT / "apiflow").rglob("*.py"), *(ROOT / "cluster").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name == "run_trial":
                    callers.append(str(path.relative_to(ROOT)))
    assert callers == ["apiflow/runner/run.py"]
