"""Load a bank folder: verify its manifest, parse worlds and tasks, compose chains.

A bank is untrusted data (docs/design/061-untrusted-banks.md): only files the manifest lists
and hashes are loaded, from the bytes that were hashed, and every problem is one UsageError line.
"""

from __future__ import annotations

import gc
import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from apiflow.bank.cache import read_cached, write_cached
from apiflow.bank.chain import ChainFile, compose_chain
from apiflow.bank.files import (
    MAX_ROUTES_PER_WORLD,
    MAX_RULES_PER_ROUTE,
    MAX_TASKS,
    MAX_WORLDS,
    load_yaml,
    one_line,
    read_capped,
    refusal,
    shown,
)
from apiflow.bank.manifest import verify_manifest
from apiflow.bank.task import TASK_ID_RE, Task
from apiflow.errors import UsageError
from apiflow.resources import resolve, shipped
from apiflow.world.model import WorldDef

DEFAULT_BANK = shipped("bank/sample")
"""The shipped sample bank (the test suite's fixture world and the demo's default)."""


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
            raise UsageError(
                f"unknown task {task_id!r} in bank {self.name!r} (see `apiflow task list`)"
            ) from None

    def world_of(self, task: Task) -> WorldDef:
        """The world a task runs in."""
        return self.worlds[task.world]


def _read(root: Path, rel: str, sha256: str) -> Any:
    """A listed bank file's data, from the very bytes whose sha256 is checked here.

    Hashing and parsing the same bytes leaves no window for a file to change between the
    manifest check and the load.
    """
    path = root / rel
    data = read_capped(path)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise refusal(path, "content does not match its manifest sha256 (changed while loading?)")
    return load_yaml(data, path)


def _parse(model: Any, path: Path, data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise refusal(path, f"invalid {model.__name__} at {where}: {first['msg']}") from None


def _check_world(path: Path, world: WorldDef) -> None:
    if len(world.routes) > MAX_ROUTES_PER_WORLD:
        raise refusal(path, f"{len(world.routes)} routes exceeds MAX_ROUTES_PER_WORLD={MAX_ROUTES_PER_WORLD}")
    for index, route in enumerate(world.routes):
        if len(route.rules) > MAX_RULES_PER_ROUTE:
            raise refusal(
                path,
                f"routes.{index}: {len(route.rules)} rules exceeds MAX_RULES_PER_ROUTE={MAX_RULES_PER_ROUTE}",
            )


def _listed(files: dict[str, str], folder: str) -> list[str]:
    """The manifest's ``<folder>/<name>.yaml`` entries, sorted (only listed, hashed files load)."""
    return sorted(
        rel for rel in files if rel.startswith(f"{folder}/") and rel.count("/") == 1 and rel.endswith(".yaml")
    )


def _sort_key(task_id: str) -> tuple[str, int, int]:
    m = TASK_ID_RE.match(task_id)
    assert m is not None
    return (m["world"], 0 if m["sub"] else 1, int(m["sub"] or m["len"]))


def _compose(file: Path, chain: ChainFile, subs: dict[str, Task], tasks: dict[str, Task]) -> Task:
    """The chain task of ``file`` from its world's subtasks 1..K (a one-line error if it cannot be)."""
    if not TASK_ID_RE.match(chain.id) or "chain-1to" not in chain.id:
        raise refusal(file, f"chain id {shown(chain.id)} is not <bank>-wNN-chain-1toKK")
    if chain.id in tasks:
        raise refusal(file, f"task id {chain.id} is defined twice")
    prefix = re.sub(r"chain-1to\d+$", "sub", chain.id)
    # Checked before building the list: a bank's `length: 1000000000` must not allocate it.
    parts = [subs.get(f"{prefix}{k:02d}") for k in range(1, min(chain.length, len(subs)) + 1)]
    if chain.length > len(subs) or any(p is None for p in parts):
        raise refusal(file, f"chain {chain.id} needs subtasks 1..{chain.length} of its world")
    try:
        return compose_chain(chain, [p for p in parts if p is not None])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise refusal(file, f"chain {chain.id} does not compose: {where}: {first['msg']}") from None


def load_bank(path: str | Path = DEFAULT_BANK, *, cache: bool = False) -> Bank:
    """Verify and load the bank at ``path`` (raises UsageError on any problem).

    Args:
        path: The bank folder, or a shipped bank's name (``sample``, ``v1``: ``apiflow.resources``).
        cache: Take the parsed bank from the per-user cache when it holds this bank hash under
            this code, and put it there after parsing (``apiflow.bank.cache``; what a grid's
            driver and workers do). The manifest is verified either way.
    """
    root = resolve("bank", path)
    if not root.is_dir():
        raise UsageError(f"bank folder {root} does not exist")
    manifest, problems = verify_manifest(root)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(one_line(f"bank {root} failed its manifest check: {problems[0]}{more}"))
    files: dict[str, str] = manifest["files"]  # type: ignore[assignment]
    world_files, task_files = _listed(files, "worlds"), _listed(files, "tasks")
    if len(world_files) > MAX_WORLDS:
        raise UsageError(f"bank {root}: {len(world_files)} world files exceeds MAX_WORLDS={MAX_WORLDS}")
    if len(task_files) > MAX_TASKS:
        raise UsageError(f"bank {root}: {len(task_files)} task files exceeds MAX_TASKS={MAX_TASKS}")
    if cache:
        cached = _from_cache(str(manifest["hash"]))
        if cached is not None and cached.name == str(manifest["bank"]):
            return replace(cached, path=root)
    bank = _parse_bank(root, manifest, files, world_files, task_files)
    if cache:
        write_cached(bank.hash, bank)
    return bank


def _from_cache(bank_hash: str) -> Bank | None:
    gc.disable()  # unpickling ~100k small objects: the cyclic GC would triple its cost
    try:
        cached = read_cached(bank_hash)
    finally:
        gc.enable()
    return cached if isinstance(cached, Bank) and cached.hash == bank_hash else None


def _parse_bank(
    root: Path,
    manifest: dict[str, object],
    files: dict[str, str],
    world_files: list[str],
    task_files: list[str],
) -> Bank:
    worlds: dict[str, WorldDef] = {}
    for rel in world_files:
        file = root / rel
        world = _parse(WorldDef, file, _read(root, rel, files[rel]))
        _check_world(file, world)
        if world.id in worlds:
            raise refusal(file, f"world id {shown(world.id)} is defined twice")
        worlds[world.id] = world
    subs: dict[str, Task] = {}
    chains: list[tuple[Path, ChainFile]] = []
    for rel in task_files:
        file = root / rel
        data = _read(root, rel, files[rel])
        if isinstance(data, dict) and data.get("kind") == "chain":
            chains.append((file, _parse(ChainFile, file, data)))
        else:
            task = _parse(Task, file, data)
            if task.id in subs:
                raise refusal(file, f"task id {task.id} is defined twice")
            subs[task.id] = task
    tasks = dict(subs)
    for file, chain in chains:
        tasks[chain.id] = _compose(file, chain, subs, tasks)
    for task in tasks.values():
        if task.world not in worlds:
            raise UsageError(
                one_line(f"task {task.id} names world {task.world!r}, which the bank does not define")
            )
    ordered = {tid: tasks[tid] for tid in sorted(tasks, key=_sort_key)}
    return Bank(
        name=str(manifest["bank"]), hash=str(manifest["hash"]), path=root, worlds=worlds, tasks=ordered
    )
