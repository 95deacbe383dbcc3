"""The run manifest: what a stored grid was run with (written before the first trial)."""

from __future__ import annotations

import importlib.metadata
import os
import secrets
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apiflow.bank import Bank
from apiflow.errors import UsageError
from apiflow.results.canary_key import KEY_PARTS, NONE, CanaryKey, folder_key
from apiflow.results.prices import PriceTable
from apiflow.results.store import ResultStore
from apiflow.tools import tool_schema_hash
from cluster.plan import trial_limits
from cluster.spec import GridSpec, canonical_hash

PACKAGES = ("apiflow", "ray", "pyarrow", "fsspec", "s3fs", "pydantic", "tenacity", "litellm")
DRAWN_SEEDS = 2**48
"""A drawn grid seed is below this (an int any JSON reader, a browser's too, keeps exactly)."""
CANARY_KEY_ID = "canary_key_id"
"""The manifest's field naming the grid's canary key (None: no key); a manifest without it predates keys."""


def grid_id(spec: GridSpec, bank: Bank) -> str:
    """sha256 of what decides the grid's trials (bank hash included; output, budget, concurrency not)."""
    return canonical_hash({**spec.identity(), "bank_hash": bank.hash})


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages a result depends on."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_state(repo: Path | None = None) -> dict[str, Any]:
    """The code's git commit and whether the work tree had uncommitted changes."""
    repo = repo or Path(__file__).resolve().parents[1]

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


def settled_seed(spec: GridSpec, stored: dict[str, Any] | None) -> tuple[GridSpec, bool]:
    """``(spec with its seed, whether the seed was drawn)``: the spec's own seed; else the one the grid's
    first run drew (the stored manifest's); else a new draw, which the manifest then keeps.

    A grid that states its seed keeps it and its grid id; one without a seed shares none with
    other grids by default, and its resume plans the same trials as its first run.
    """
    if spec.seed is not None:
        return spec, False
    seed = ((stored or {}).get("grid") or {}).get("seed")
    if not isinstance(seed, int):
        seed = secrets.randbelow(DRAWN_SEEDS)
    return spec.with_overrides(seed=seed), True


def grid_canary_key(
    spec: GridSpec, store: ResultStore, stored: dict[str, Any] | None
) -> tuple[GridSpec, CanaryKey | None]:
    """The grid's canary key (made in the output at its first run, found again on resume) and the
    spec the workers get (``canary_key: none`` when the grid has none).

    A grid stored before canary keys (its manifest names none) keeps running without one, so a
    resume makes the records its first run would have.

    Raises:
        UsageError: The spec's mode is not the one the stored grid ran with, or the output's key is
            not the one its manifest names.
    """
    if stored is not None and CANARY_KEY_ID not in stored:
        return spec.with_overrides(canary_key=NONE), None
    named = stored[CANARY_KEY_ID] if stored is not None else None
    if stored is not None and (named is None) != (spec.canary_key == NONE):
        ran = "none" if named is None else "folder"
        raise UsageError(
            f"{store.url} holds a grid run with canary_key: {ran}, and this grid says {spec.canary_key}; "
            "a grid keeps the mode it started with"
        )
    if spec.canary_key == NONE:
        return spec, None
    key = folder_key(store.objects)
    if named is not None and key.id != named:
        raise UsageError(
            f"{store.url}: its canary key {key.id} is not the key {named} its grid ran with; "
            f"restore that key at {'/'.join(KEY_PARTS)}"
        )
    return spec, key


def build_manifest(
    spec: GridSpec,
    bank: Bank,
    prices: PriceTable,
    planned: int,
    *,
    seed_drawn: bool = False,
    canary_key: CanaryKey | None = None,
) -> dict[str, Any]:
    """The manifest of a grid's output (identical on every resume of the same grid).

    It names the canary key by its id only (the key stays under ``_secret/``), and says whether the
    grid's seed was drawn at its first run (``settled_seed``).
    """
    from apiflow.agent.ids import agent_version

    return {
        "grid_id": grid_id(spec, bank),
        "seed_drawn": seed_drawn,
        CANARY_KEY_ID: canary_key.id if canary_key is not None else None,
        "grid": _public(spec),
        "bank": {"name": bank.name, "hash": bank.hash, "tasks": len(bank.tasks)},
        "price_table": {"version": prices.version, "hash": prices.hash},
        "agent_version": agent_version(trial_limits(spec)),
        "tool_schema_hash": tool_schema_hash(),
        "planned_trials": planned,
        "packages": package_versions(),
        "git": git_state(),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _public(spec: GridSpec) -> dict[str, Any]:
    """The spec without secrets: transport params and storage options keep their keys only."""
    data = spec.model_dump(mode="json")
    data["storage_options"] = {k: "<set>" for k in data["storage_options"]}
    for model in data["models"]:
        model["params"] = {k: "<set>" for k in model["params"]}
    return data


def attempt_info(run_id: str, flags: dict[str, Any]) -> dict[str, Any]:
    """One driver invocation: when, where, with which code and flags."""
    return {
        "run_id": run_id,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": os.uname().nodename,
        "pid": os.getpid(),
        "flags": flags,
        "packages": package_versions(),
        "git": git_state(),
    }
