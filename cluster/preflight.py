"""Keys checked before the first trial: a grid that cannot authenticate says so in one line and spends
nothing, instead of retrying every trial as a server error.

Two checks, per litellm model of the grid: that a key is in reach (the model's ``params.api_key`` or
the environment variables litellm's route reads), and that the provider accepts it (one call of one
output token). ``preflight: auto`` runs both for a route with no ``api_base`` of its own (a real
provider's endpoint) and neither for a local server; ``env`` and ``call`` run them everywhere.
"""

from __future__ import annotations

import asyncio

from apiflow.models import uses_litellm
from cluster.spec import GridModel, GridSpec


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
