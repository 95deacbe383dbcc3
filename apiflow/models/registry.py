"""``make_model``: every model by name, offline ones and (for any other name) the litellm adapter."""

from __future__ import annotations

import re
from typing import Any

from apiflow.bank.task import Task
from apiflow.errors import UsageError
from apiflow.models.adversarial import ADV_PREFIX, ADVERSARIES, ADVERSARY_MODELS, adversary_model
from apiflow.models.base import ModelClient
from apiflow.models.offline import blank_model, oracle_model
from apiflow.models.sim import PROFILES, is_sim_profile, sim_model, sim_profile_names

OFFLINE_PREFIX = "apiflow/"
EXTERNAL_PREFIX = "external/"
"""Agents that run outside apiflow and reach the trial's world over MCP (``apiflow.models.external``)."""
SIM_PREFIX = "apiflow/sim:"
OFFLINE_PROFILES: tuple[str, ...] = tuple(PROFILES)
"""Simulated-agent profile names, strongest first (``apiflow/sim:<profile>``)."""

OFFLINE_MODELS: tuple[str, ...] = ("apiflow/oracle", "apiflow/blank", *(SIM_PREFIX + p for p in PROFILES))
"""The offline models a demo grid runs (the adversaries, ``ADVERSARY_MODELS``, are for audits)."""


def is_offline(name: str) -> bool:
    """True for the models that run in process without a provider."""
    return name.startswith(OFFLINE_PREFIX)


def model_slug(name: str) -> str:
    """The results folder name of a model: ``apiflow/sim:weak`` -> ``apiflow-sim-weak``,
    ``openai/gpt-5-mini`` -> ``gpt-5-mini`` (the published slugs drop the provider route)."""
    base = name if is_offline(name) else name.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-") or "model"


def check_model_name(name: str) -> None:
    """Raise ``UsageError`` for a name ``make_model`` would refuse, without building anything."""
    if not name or name != name.strip() or any(ch.isspace() for ch in name):
        raise UsageError(f"bad model name {name!r}")
    if name.startswith(SIM_PREFIX) and is_sim_profile(name[len(SIM_PREFIX) :]):
        return
    if name.startswith(EXTERNAL_PREFIX):
        if not name[len(EXTERNAL_PREFIX) :]:
            raise UsageError(f"bad model name {name!r}: external/<label> names an external agent")
        return
    if is_offline(name) and name not in OFFLINE_MODELS and name not in ADVERSARY_MODELS:
        if name.startswith(ADV_PREFIX):
            known = ", ".join(ADVERSARIES)
            raise UsageError(f"unknown adversary {name[len(ADV_PREFIX) :]!r}; known: {known}")
        if name.startswith(SIM_PREFIX):
            known = ", ".join(sim_profile_names())
            raise UsageError(f"unknown sim profile {name[len(SIM_PREFIX) :]!r}; known: {known}")
        raise UsageError(f"unknown offline model {name!r}; known: {', '.join(OFFLINE_MODELS)}")
    if not is_offline(name):
        # Imported only on the provider path: offline models never load litellm.
        from apiflow.models.litellm_client import check_model_id

        check_model_id(name)


def make_model(name: str, task: Task, seed: int, params: dict[str, Any] | None = None) -> ModelClient:
    """Build the model for one trial.

    Args:
        name: ``apiflow/oracle``, ``apiflow/blank``, ``apiflow/sim:<profile>``, ``apiflow/adv:<name>``
            (a cheating agent, ``apiflow.models.adversarial``), or any litellm model
            id (e.g. ``openai/gpt-5-mini``), which goes to the litellm adapter.
        task: The trial's task (offline models play or perturb its golden solution).
        seed: The trial seed; offline randomness derives from it.
        params: Provider parameters for the litellm adapter (api_base, timeout, ...).

    Raises:
        UsageError: Unknown offline model or sim profile, or a malformed name.
    """
    check_model_name(name)
    if name == "apiflow/oracle":
        return oracle_model(task)
    if name == "apiflow/blank":
        return blank_model()
    if name.startswith(SIM_PREFIX):
        return sim_model(task, seed, name[len(SIM_PREFIX) :])
    if name.startswith(ADV_PREFIX):
        return adversary_model(name[len(ADV_PREFIX) :], task, seed)
    if name.startswith(EXTERNAL_PREFIX):
        # Imported on use: the MCP bridge loads the mcp SDK, which offline runs never need.
        from apiflow.models.external import external_model

        return external_model(name, task, seed, params)
    # Imported only on the provider path: offline models never load litellm.
    from apiflow.models.litellm_client import LiteLLMClient

    return LiteLLMClient(name, params)
