"""Load a bank folder: verify its manifest, parse worlds and tasks, compose chains."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from apiflow.bank.chain import ChainFile, compose_chain
from apiflow.bank.manifest import verify_manifest
from apiflow.bank.task import TASK_ID_RE, Task
from apiflow.errors import UsageError
from apiflow.world.model import WorldDef

DEFAULT_BANK = Path(__file__).resolve().parents[2] / "bank" / "sample"
"""The repository's sample bank (the test suite's fixture world and the demo's default)."""


@dataclass(frozen=True)
class Bank:
    """A verified bank: worlds and tasks by id, with the bank hash every trial records."""

    name: str
    hash: str
    path: Path
    worlds: dict[str, WorldDef]
    tasks: dict[str, Task] = field(default_factory=dict)

    def task(self, task_id: str) -> Task:
        """The task ``task_id``; a clear UsageError when the bank has no such task."""
        try:
            return self.tasks[task_id]
        except KeyError:
            raise UsageError(f"unknown task {task_id!r} in bank {self.name!r} (see `apiflow task list`)") from None

    def world_of(self, task: Task) -> WorldDef:
        """The world a task runs in."""
        return self.worlds[task.world]


def _read(path: Path) -> Any:
    try:
        # libyaml's loader when present: same safe constructor, ~10x faster on a full bank.
        return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML/JSON ({exc})") from None


def _parse(model: Any, path: Path, data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UsageError(f"{path}: invalid {model.__name__} at {where}: {first['msg']}") from None


def _sort_key(task_id: str) -> tuple[str, int, int]:
    m = TASK_ID_RE.match(task_id)
    assert m is not None
    return (m["world"], 0 if m["sub"] else 1, int(m["sub"] or m["len"]))


def load_bank(path: str | Path = DEFAULT_BANK) -> Bank:
    """Verify and load the bank at ``path`` (raises UsageError on any problem)."""
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"bank folder {root} does not exist")
    manifest, problems = verify_manifest(root)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"bank {root} failed its manifest check: {problems[0]}{more}")
    worlds: dict[str, WorldDef] = {}
    for file in sorted((root / "worlds").glob("*.yaml")):
        world = _parse(WorldDef, file, _read(file))
        worlds[world.id] = world
    subs: dict[str, Task] = {}
    chains: list[tuple[Path, ChainFile]] = []
    for file in sorted((root / "tasks").glob("*.yaml")):
        data = _read(file)
        if isinstance(data, dict) and data.get("kind") == "chain":
            chains.append((file, _parse(ChainFile, file, data)))
        else:
            task = _parse(Task, file, data)
            subs[task.id] = task
    tasks = dict(subs)
    for file, chain in chains:
        prefix = re.sub(r"chain-1to\d+$", "sub", chain.id)
        parts = [subs.get(f"{prefix}{k:02d}") for k in range(1, chain.length + 1)]
        if any(p is None for p in parts):
            raise UsageError(f"{file}: chain {chain.id} needs subtasks 1..{chain.length} of its world")
        tasks[chain.id] = compose_chain(chain, [p for p in parts if p is not None])
    for task in tasks.values():
        if task.world not in worlds:
            raise UsageError(f"task {task.id} names world {task.world!r}, which the bank does not define")
    ordered = {tid: tasks[tid] for tid in sorted(tasks, key=_sort_key)}
    return Bank(name=str(manifest["bank"]), hash=str(manifest["hash"]), path=root, worlds=worlds, tasks=ordered)
