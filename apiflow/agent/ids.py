"""Content-derived identities and seeds: sha256 of what makes a trial, never ``hash()`` or uuid4."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any, Final

from apiflow.agent.intake import NAME_CHARS, TURN_BOUNDS, USAGE_TOKENS
from apiflow.agent.loop import TrialLimits
from apiflow.agent.prompts import PROMPT_HASH
from apiflow.results.canary_key import CanaryKey
from apiflow.tools.limits import TOOL_BOUNDS
from apiflow.version import __version__

FIRST_INPUT_BOUNDS: Final[dict[str, int]] = {
    "argument_chars": 262_144,
    "argument_depth": 64,
    "tool_result_chars": 1_048_576,
    "workspace_entities": 5_000,
    "workspace_chars": 16_777_216,
    "parallel_calls": 64,
    "text_chars": 262_144,
    "transcript_chars": 16_777_216,
    "name_chars": 256,
    "usage_tokens": 100_000_000,
}
"""The bounds on model input as first introduced, written out (docs/design/031).

They enter ``agent_version`` only once they differ from this set: trials run before the bounds
existed keep their ids (no honest trial meets a bound, so their records are what they would be
now), and any later change of a bound gives new ids, so a resume never mixes two bound sets.
"""


def input_bounds() -> dict[str, int]:
    """Every bound on model input in force, by name (tools, loop, and the intake's repair thresholds)."""
    return {**TOOL_BOUNDS, **TURN_BOUNDS, "name_chars": NAME_CHARS, "usage_tokens": USAGE_TOKENS}


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))
"""What ``json.dumps(..., sort_keys=True, separators=(",", ":"))`` builds on every call, built once
(four digests per trial; the encoder holds no state between calls)."""


def _digest(*parts: Any) -> str:
    return hashlib.sha256(_ENCODER.encode(parts).encode()).hexdigest()


@functools.lru_cache(maxsize=8192, typed=True)
def derived_seed(purpose: str, seed: int, task_id: str, epoch: int) -> int:
    """A 63-bit seed for one purpose of one trial (world, workspace, model).

    Kept for the trials that ask again (every trial of a (task, epoch) in a grid asks for the same
    world, workspace and canary seeds); ``typed``: ``1``, ``1.0`` and ``True`` digest differently.
    """
    return int(_digest("seed", purpose, seed, task_id, epoch)[:16], 16) >> 1


@functools.lru_cache(maxsize=8192, typed=True)
def canary_seed(seed: int, task_id: str, epoch: int, key: CanaryKey | None = None) -> int:
    """The seed of one trial's canary forms (``apiflow.world.canaries``).

    Without a key, ``derived_seed("canary", ...)``: anyone with the record's seed and the code can
    compute it (tests, benchmarks, audits). With one, an HMAC-SHA256 under the results folder's
    secret key (``apiflow.results.canary_key``), so a released record predicts no other trial's forms.
    """
    if key is None:
        return derived_seed("canary", seed, task_id, epoch)
    message = _ENCODER.encode(("canary", seed, task_id, epoch)).encode()
    return int(hmac.new(key.secret, message, hashlib.sha256).hexdigest()[:16], 16) >> 1


def trial_seed(seed: int, task_id: str, epoch: int) -> int:
    """The seed a runner gives ``make_model`` for one trial, so epochs differ but replay exactly."""
    return derived_seed("model", seed, task_id, epoch)


@functools.cache
def agent_version(limits: TrialLimits) -> str:
    """Package version + hash of the prompts and limits: the agent configuration of a trial.

    The bounds on model input join the limits only when they differ from ``FIRST_INPUT_BOUNDS``.
    """
    limits_key: list[Any] = [
        limits.max_messages,
        limits.max_tool_calls,
        limits.max_tokens,
        limits.max_seconds,
    ]
    bounds = input_bounds()
    if bounds != FIRST_INPUT_BOUNDS:
        limits_key.append(sorted(bounds.items()))
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
