"""Process-global mutable state in ``apiflow``: the few module-level memos it keeps, each named here.

A trial must be a function of its arguments (the run owns replay: ``apiflow.agent.replay``), so a
module-level container that code writes after import is state shared by every trial of a process.
The ones kept are bounded memos of data derived from a bank's own frozen objects (a task's canary
literals, a world's compiled routes, a script's calls): they answer alike whichever trial asks.
Read-only tables (``TOOL_BOUNDS``, ``RULE_SETS``) are containers nobody writes, and are not counted.

The walk counts a module-level name as mutable state when it is bound to a memo type (``IdentityMemo``,
``OrderedDict``, weak dictionaries, ``defaultdict``) or when any function, in its own module or one
that imports it, writes it (item assignment or deletion, or a mutating method). The last test plants
such a cache in a copy of the tree and checks the walk reports it.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ALLOWED: dict[str, str] = {
    "apiflow.agent.canaries._literals": "a task's canary literals (per bank task object, weakly held)",
    "apiflow.agent.canaries._templates": "which spec fields of a task name a literal (per task, weakly held)",
    "apiflow.agent.canaries._saltings": "a (task, epoch)'s salted task, shared by its models (LRU, 512)",
    "apiflow.models.calibrated._segments_memo": "a chain's segment layout (per task, weakly held)",
    "apiflow.models.offline._call_memo": "what a script needs of a bank call (per call object, weakly held)",
    "apiflow.models.offline._script_memo": "a task's golden script (per task, weakly held)",
    "apiflow.models.reading._readers": "canary readers by learned forms, a pure function of them (LRU, 4096)",
    "apiflow.world.compiled._COMPILED": "a world's compiled routes and templates (per world, weakly held)",
}
"""Every module-level container ``apiflow`` writes after import, and why it may be kept."""

MOST = 8

MEMO_TYPES = frozenset(
    {"IdentityMemo", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary", "WeakSet", "defaultdict"}
)
CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
CONTAINER_CALLS = frozenset({"dict", "list", "set", "bytearray", "deque", "Counter", *MEMO_TYPES})
MUTATORS = frozenset(
    {
        "append", "add", "update", "clear", "pop", "popitem", "setdefault", "extend", "insert",
        "remove", "discard", "move_to_end", "appendleft", "popleft", "__setitem__", "__delitem__",
    }
)  # fmt: skip


def _callee(node: ast.expr) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _module_containers(tree: ast.Module) -> dict[str, bool]:
    """Module-level names bound to a container: name -> whether it is a memo type."""
    found: dict[str, bool] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        callee = _callee(value)
        if isinstance(value, CONTAINERS) or callee in CONTAINER_CALLS:
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = callee in MEMO_TYPES
    return found


def _written_in_functions(tree: ast.Module) -> set[str]:
    """Names a function body writes into: ``n[k] = v``, ``del n[k]``, ``n.add(...)`` and the like."""
    written: set[str] = set()
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(func):
            targets: list[ast.expr] = []
            if isinstance(node, (ast.Assign, ast.Delete)):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    written.add(target.value.id)
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                written.add(node.target.id)  # ``n |= {...}`` under ``global n``
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name):
                    written.add(node.func.value.id)
    return written


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_state(root: Path) -> set[str]:
    """Qualified names of the module-level containers under ``root/apiflow`` written after import."""
    trees = {_module_name(p, root): ast.parse(p.read_text(encoding="utf-8")) for p in (root / "apiflow").rglob("*.py")}
    containers = {name: _module_containers(tree) for name, tree in trees.items()}
    state = {f"{m}.{n}" for m, names in containers.items() for n, memo in names.items() if memo}
    for module, tree in trees.items():
        written = _written_in_functions(tree)
        state.update(f"{module}.{n}" for n in containers[module] if n in written)
        for node in ast.walk(tree):  # written through an import: ``from m import TABLE; TABLE[k] = v``
            if isinstance(node, ast.ImportFrom) and node.module in containers and not node.level:
                for alias in node.names:
                    if alias.name in containers[node.module] and (alias.asname or alias.name) in written:
                        state.add(f"{node.module}.{alias.name}")
    return state


def test_module_state_is_the_allowed_few() -> None:
    found = module_state(ROOT)
    assert sorted(found - ALLOWED.keys()) == [], "new process-global state: pass it in, or own it per run"
    assert sorted(ALLOWED.keys() - found) == [], "allowed state that no longer exists: drop it from ALLOWED"
    assert len(ALLOWED) <= MOST


def test_function_memos_are_bounded() -> None:
    """An ``lru_cache`` names its size: a memo that grows with every distinct argument is a leak on a grid."""
    unbounded = []
    for path in sorted((ROOT / "apiflow").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if _callee(node) == "lru_cache" and isinstance(node, ast.Call):
                size = next((k.value for k in node.keywords if k.arg == "maxsize"), None)
                size = size if size is not None else (node.args[0] if node.args else None)
                if not (isinstance(size, ast.Constant) and isinstance(size.value, int)):
                    unbounded.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unbounded == []


def test_a_planted_cache_is_found(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "apiflow", tmp_path / "apiflow", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "apiflow" / "tools" / "planted.py").write_text(
        "_SEEN = {}\n\n\ndef remember(key, value):\n    _SEEN[key] = value\n", encoding="utf-8"
    )
    (tmp_path / "apiflow" / "tools" / "planted_too.py").write_text(
        "from apiflow.tools.limits import TOOL_BOUNDS\n\n\ndef widen():\n    TOOL_BOUNDS.update(x=1)\n",
        encoding="utf-8",
    )
    found = module_state(tmp_path)
    assert {"apiflow.tools.planted._SEEN", "apiflow.tools.limits.TOOL_BOUNDS"} <= found


GC_TUNERS = ("settle_loaded", "freeze", "unfreeze", "set_threshold", "disable")
ENTRY_POINTS = {
    "apiflow/agent/heap.py": "defines settle_loaded",
    "apiflow/runner/pool.py": "a pool worker's initializer: the process's entry",
    "cluster/worker.py": "a grid actor's start: the actor's process",
    "apiflow/cli/run.py": "the console script's verb, only when the process is its own",
    "apiflow/cli/panel.py": "the console script's verb, only when the process is its own",
    "apiflow/cli/panel_stability.py": "the console script's verb, only when the process is its own",
}
SCOPED = {"apiflow/bank/loader.py", "cluster/plan.py"}
"""``gc.disable()`` around one build, re-enabled in a ``finally``: nothing lasts past the call."""


def _tunes(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "settle_loaded"
    return (
        isinstance(func, ast.Attribute)
        and func.attr in GC_TUNERS
        and isinstance(func.value, ast.Name)
        and func.value.id == "gc"
    )


def test_gc_is_tuned_only_at_process_entry_points() -> None:
    """A library call that froze the heap or moved the thresholds would change every later caller's
    process (a notebook, a test): only a process's own entry point may."""
    found = []
    for root in ("apiflow", "cluster"):
        for path in sorted((ROOT / root).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            tree = ast.parse(path.read_text(encoding="utf-8"))
            guarded = set()
            for node in ast.walk(tree):  # calls under ``if args.own_process:``
                if isinstance(node, ast.If) and "own_process" in ast.unparse(node.test):
                    guarded.update(id(n) for n in ast.walk(node))
            for node in ast.walk(tree):
                if not _tunes(node) or rel in SCOPED:
                    continue
                if rel not in ENTRY_POINTS or (rel.startswith("apiflow/cli/") and id(node) not in guarded):
                    found.append(f"{rel}:{node.lineno}")
    assert found == []
