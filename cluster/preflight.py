"""Keys checked before the first trial: a grid that cannot authenticate says so in one line and spends
nothing, instead of retrying every trial as a server error.

Two checks, per litellm model of the grid: that a key is in reach (the model's ``params.api_key`` or
the environment variables litellm's route reads), and that the provider accepts it (one call of one
output token). ``preflight: auto`` runs both for a route with no ``api_base`` of its own (a real
provider's endpoint) and neither for a local server; ``env`` and ``call`` run them everywhere.

Both run on the driver, but trials run in actors on every node, which see their own node's environment
(what its ``ray start`` was given), not the driver's. ``node_keys`` runs the first check on every node
of a cluster the driver did not start, one tiny task per node answering with key *names* only
(infra/README.md: how each launch path gives every node the keys).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from apiflow.models import uses_litellm
from cluster.spec import GridModel, GridSpec

NODE_CHECK_S = 120.0
"""How long the per-node key check waits for a node (a fresh worker process imports litellm)."""


def _checked(spec: GridSpec, model: GridModel, *, call: bool) -> bool:
    if not uses_litellm(model.model) or spec.preflight == "off":
        return False
    if spec.preflight == "auto":
        return "api_base" not in model.params
    return spec.preflight == "call" or not call


def missing_keys(spec: GridSpec) -> list[str]:
    """One line per litellm model whose key is not in reach."""
    checked = [m for m in spec.models if _checked(spec, m, call=False)]
    if not checked:
        return []
    from apiflow.models.litellm_client import missing_key

    return [line for line in (missing_key(m.model, m.params) for m in checked) if line]


def rejected_keys(spec: GridSpec) -> list[str]:
    """One line per litellm model whose provider refuses its key or its account (one tiny call each)."""
    probed = [m for m in spec.models if _checked(spec, m, call=True)]
    if not probed:
        return []
    from apiflow.models.litellm_client import configure_litellm, rejected_key

    configure_litellm()

    async def probe() -> list[str | None]:
        return list(await asyncio.gather(*(rejected_key(m.model, m.params) for m in probed)))

    return [line for line in asyncio.run(probe()) if line]


@dataclass(frozen=True)
class NodeKeys:
    """What each node of the cluster answered: the nodes that did, and one line per key not in reach."""

    checked: tuple[str, ...] = ()
    """Addresses of the nodes that answered (nodes an autoscaler adds later are not among them)."""
    missing: tuple[str, ...] = ()
    """``node <address> (<id>): <model>: no API key: set <NAMES> ...``: a trial there would not authenticate."""
    unanswered: tuple[str, ...] = ()
    """``node <address> (<id>): ...``: nodes whose check failed or did not answer in time."""


def _env_keyed(spec: GridSpec) -> list[str]:
    """The checked models whose key comes from the environment (``params.api_key`` travels with the spec)."""
    return sorted(
        {m.model for m in spec.models if _checked(spec, m, call=False) and not m.params.get("api_key")}
    )


def missing_here(models: list[str]) -> list[str]:
    """``missing_keys`` for ``models`` in this process's environment: runs on each node (names, never values)."""
    from apiflow.models.litellm_client import missing_key

    return [line for line in (missing_key(model, {}) for model in models) if line]


def node_keys(ray: Any, spec: GridSpec, timeout_s: float = NODE_CHECK_S) -> NodeKeys:
    """Whether the actors on every live node with CPUs will find the grid's keys in their environment.

    ``ray`` is the connected ``ray`` module (only the actors, the driver and its session import Ray).
    One zero-CPU task is pinned to each node; it sends back model ids and variable names, never values.
    """
    models = _env_keyed(spec)
    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
    if not models or not nodes:
        return NodeKeys()
    pinned = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy
    probe = ray.remote(num_cpus=0, max_retries=0)(missing_here)
    asked = {  # the address says which machine; the id's start tells apart nodes sharing one
        probe.options(scheduling_strategy=pinned(node_id=n["NodeID"], soft=False)).remote(models):
            f"{n['NodeManagerAddress']} ({n['NodeID'][:8]})"
        for n in nodes
    }  # fmt: skip
    ready, pending = ray.wait(list(asked), num_returns=len(asked), timeout=timeout_s)
    checked: list[str] = []
    missing: list[str] = []
    unanswered = [f"node {asked[ref]}: no answer to the key check in {timeout_s:.0f} s" for ref in pending]
    for ref in pending:
        ray.cancel(ref, force=True)
    for ref in ready:
        try:
            lines = ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - a node that cannot run the check is named, not fatal
            unanswered.append(f"node {asked[ref]}: key check failed ({type(exc).__name__})")
            continue
        checked.append(asked[ref])
        missing += [f"node {asked[ref]}: {line}" for line in lines]
    return NodeKeys(tuple(sorted(checked)), tuple(sorted(missing)), tuple(sorted(unanswered)))
