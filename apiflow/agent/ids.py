"""Content-derived identities and seeds: sha256 of what makes a trial, never ``hash()`` or uuid4."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from apiflow import __version__
from apiflow.agent.loop import TrialLimits
from apiflow.agent.prompts import PROMPT_HASH


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def derived_seed(purpose: str, seed: int, task_id: str, epoch: int) -> int:
    """A 63-bit seed for one purpose of one trial (world, workspace, model)."""
    return int(_digest("seed", purpose, seed, task_id, epoch)[:16], 16) >> 1


def trial_seed(seed: int, task_id: str, epoch: int) -> int:
    """The seed a runner gives ``make_model`` for one trial, so epochs differ but replay exactly."""
    return derived_seed("model", seed, task_id, epoch)


@functools.cache
def agent_version(limits: TrialLimits) -> str:
    """Package version + hash of the prompts and limits: the agent configuration of a trial."""
    limits_key = [limits.max_messages, limits.max_tool_calls, limits.max_tokens, limits.max_seconds]
    return f"{__version__}+{_digest(PROMPT_HASH, limits_key)[:12]}"


def trial_id_for(
    bank_hash: str,
    task_id: str,
    model_slug: str,
    model_api: str,
    epoch: int,
    seed: int,
    agent: str,
    tool_schema_hash: str,
) -> str:
    """The trial id: sha256 over everything that decides the trial (a rerun gets the same id)."""
    return _digest("trial", bank_hash, task_id, model_slug, model_api, epoch, seed, agent, tool_schema_hash)


def run_id_for(bank_hash: str, model_slug: str, task_ids: Sequence[str], epochs: int, seed: int) -> str:
    """A 22-character run id (the published length) from the run's content."""
    return _digest("run", bank_hash, model_slug, list(task_ids), epochs, seed)[:22]
