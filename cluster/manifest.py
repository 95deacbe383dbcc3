"""The run manifest: what a stored grid was run with (written before the first trial)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apiflow.bank import Bank
from apiflow.results.prices import PriceTable
from apiflow.tools import tool_schema_hash
from cluster.plan import trial_limits
from cluster.spec import GridSpec, canonical_hash

PACKAGES = ("apiflow", "ray", "pyarrow", "fsspec", "s3fs", "pydantic", "tenacity", "litellm")


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


def build_manifest(spec: GridSpec, bank: Bank, prices: PriceTable, planned: int) -> dict[str, Any]:
    """The manifest of a grid's output (identical on every resume of the same grid)."""
    from apiflow.agent.ids import agent_version

    return {
        "grid_id": grid_id(spec, bank),
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
