"""``make_model``: every model by name.

Routing order: built-in ``apiflow/...`` (offline, sims, adversaries), ``external/<label>`` (an agent
over MCP), installed plug-ins by prefix (``apiflow.models.plugins``), then the litellm adapter for
any other name.
"""

from __future__ import annotations

import re
from typing import Any

from apiflow.bank.task import Task
from apiflow.errors import UsageError
from apiflow.models.adversarial import ADV_PREFIX, ADVERSARIES, ADVERSARY_MODELS, adversary_model
from apiflow.models.adversarial.hostile import HOSTILE_MODELS, HOSTILE_PREFIX, HOSTILES, hostile_model
from apiflow.models.base import ModelClient
from apiflow.models.calibrated import calibrated_model, is_calibrated_profile
from apiflow.models.offline import ScriptedModel, blank_model, oracle_model
from apiflow.models.plugins import (
    FREE,
    builtin_factory,
    check_plugin_name,
    is_plugin,
    make_plugin_model,
    plugin_prices,
)
from apiflow.models.sim import PROFILES, named_sim_model
from apiflow.results.prices import STANDARD, Prices, PriceTable

OFFLINE_PREFIX = "apiflow/"
EXTERNAL_PREFIX = "external/"
"""Agents that run outside apiflow and reach the trial's world over MCP (``apiflow.mcp.external``)."""
SIM_PREFIX = "apiflow/sim:"
OFFLINE_PROFILES: tuple[str, ...] = tuple(PROFILES)
"""Simulated-agent profile names, strongest first (``apiflow/sim:<profile>``)."""

OFFLINE_MODELS: tuple[str, ...] = ("apiflow/oracle", "apiflow/blank", *(SIM_PREFIX + p for p in PROFILES))
"""The offline models a demo grid runs (the adversaries, ``ADVERSARY_MODELS``, are for audits)."""


def is_sim_profile(name: str) -> bool:
    """True for every profile ``apiflow/sim:<profile>`` accepts: the named ones (``PROFILES``) and the
    calibrated panel's ``calibrated-<slug>`` (``apiflow.models.calibrated``; not in ``PROFILES``, so
    demo grids are unchanged)."""
    return name in PROFILES or is_calibrated_profile(name)


def sim_profile_names() -> tuple[str, ...]:
    """Every accepted profile name, for error messages."""
    return (*PROFILES, "calibrated-<published slug>")


def sim_model(task: Task, seed: int, profile_name: str) -> ScriptedModel:
    """``apiflow/sim:<profile>`` for one trial: a named profile's sim or a calibrated one (the two
    kinds are dispatched here, so neither module needs the other's name table)."""
    if profile_name in PROFILES:
        return named_sim_model(task, seed, profile_name)
    return calibrated_model(task, seed, profile_name)


def is_offline(name: str) -> bool:
    """True for the models that run in process without a provider."""
    return name.startswith(OFFLINE_PREFIX)


def uses_litellm(name: str) -> bool:
    """True for the names the litellm adapter serves (not built-in, external or a plug-in)."""
    return not (is_offline(name) or name.startswith(EXTERNAL_PREFIX) or is_plugin(name))


def model_slug(name: str) -> str:
    """The results folder name of a model: ``apiflow/sim:weak`` -> ``apiflow-sim-weak``,
    ``openai/gpt-5-mini`` -> ``gpt-5-mini`` (the published slugs drop the provider route), a
    plug-in's ``my-agent/solver`` -> ``my-agent-solver`` (its prefix names the agent: kept)."""
    base = name if is_offline(name) or is_plugin(name) else name.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-") or "model"


def model_prices(table: PriceTable, slug: str, name: str, tier: str = STANDARD) -> Prices | None:
    """A model's prices: the table's entry for its slug, else for its name (litellm ids are table
    aliases), at its service ``tier``; else a plug-in's own (declared, or free), else free for an
    external agent (its spend is not ours to see); None when there are none (``price_source`` says
    which applied)."""
    for key in (slug, name):
        if table.has(key):
            return table.price(key, tier)
    if name.startswith(EXTERNAL_PREFIX):
        return FREE
    return plugin_prices(name) if is_plugin(name) else None


def price_source(table: PriceTable, slug: str, name: str, tier: str = STANDARD) -> str:
    """Where ``model_prices`` takes a model's prices from, as a row's ``price_table`` column says it:
    the table's version (and the tier, when not standard), else ``"<version>: none for <name>,
    <free|declared> by default"``."""
    if table.has(slug) or table.has(name):
        return table.version if tier == STANDARD else f"{table.version} {tier}"
    if is_plugin(name) and not name.startswith(EXTERNAL_PREFIX) and plugin_prices(name) != FREE:
        return f"{table.version}: none for {name}, declared by its plug-in"
    return f"{table.version}: none for {name}, free by default"


def check_model_name(name: str) -> None:
    """Raise ``UsageError`` for a name ``make_model`` would refuse, without building anything."""
    if name.split() != [name]:  # empty, or any whitespace (str.split splits on what isspace() is)
        raise UsageError(f"bad model name {name!r}")
    if name.startswith(SIM_PREFIX) and is_sim_profile(name[len(SIM_PREFIX) :]):
        return
    if name.startswith(EXTERNAL_PREFIX):
        if not name[len(EXTERNAL_PREFIX) :]:
            raise UsageError(f"bad model name {name!r}: external/<label> names an external agent")
        return
    if (
        is_offline(name)
        and name not in OFFLINE_MODELS
        and name not in ADVERSARY_MODELS
        and name not in HOSTILE_MODELS
    ):
        if name.startswith(HOSTILE_PREFIX):
            known = ", ".join(HOSTILES)
            raise UsageError(f"unknown hostile adversary {name[len(HOSTILE_PREFIX) :]!r}; known: {known}")
        if name.startswith(ADV_PREFIX):
            known = ", ".join(ADVERSARIES)
            raise UsageError(f"unknown adversary {name[len(ADV_PREFIX) :]!r}; known: {known}")
        if name.startswith(SIM_PREFIX):
            known = ", ".join(sim_profile_names())
            raise UsageError(f"unknown sim profile {name[len(SIM_PREFIX) :]!r}; known: {known}")
        raise UsageError(f"unknown offline model {name!r}; known: {', '.join(OFFLINE_MODELS)}")
    if is_plugin(name):
        check_plugin_name(name)
        return
    if not is_offline(name):
        # Imported only on the provider path: offline models never load litellm.
        from apiflow.models.litellm_client import check_model_id

        check_model_id(name)


def make_model(name: str, task: Task, seed: int, params: dict[str, Any] | None = None) -> ModelClient:
    """Build the model for one trial.

    Args:
        name: ``apiflow/oracle``, ``apiflow/blank``, ``apiflow/sim:<profile>``, ``apiflow/adv:<name>``
            (a cheating agent, ``apiflow.models.adversarial``), ``apiflow/hostile:<name>`` (an agent that
            attacks the harness, ``apiflow.models.adversarial.hostile``), ``external/<label>`` (an agent over
            MCP), ``<prefix>/<model>`` of an installed plug-in (``apiflow.models.plugins``), or any
            litellm model id (e.g. ``openai/gpt-5-mini``), which goes to the litellm adapter.
        task: The trial's task (offline models play or perturb its golden solution).
        seed: The trial seed; offline randomness derives from it.
        params: Provider parameters for the litellm adapter (api_base, timeout, ...), the external
            agent's transport, or a plug-in's own parameters.

    Raises:
        UsageError: Unknown offline model or sim profile, a malformed name, or a plug-in that
            cannot be loaded or refuses the name (a plug-in's fault while building the model of
            a trial is not raised: that trial ends as a ``harness_error``).
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
    if name.startswith(HOSTILE_PREFIX):
        return hostile_model(name[len(HOSTILE_PREFIX) :], task, seed)
    if name.startswith(EXTERNAL_PREFIX):
        # apiflow.mcp registers it (pyproject's entry points): loaded on use, since the MCP bridge
        # loads the mcp SDK, which offline runs never need.
        return builtin_factory("external")(name, task, seed, params)
    if is_plugin(name):
        return make_plugin_model(name, task, seed, params)
    # Imported only on the provider path: offline models never load litellm.
    from apiflow.models.litellm_client import LiteLLMClient

    return LiteLLMClient(name, params)
