"""Cost per trial, mean cost per model, and the cost vs pass-rate Pareto frontier.

A trial's cost is the ``cost_usd`` our harness recorded (priced at run time with a pinned table)
or, for rows without one (the published table) or when a price table is given explicitly,
tokens x that table's prices (``apiflow.results.prices``). Published tokens map onto the priced
kinds as: input -> input, output -> output (reasoning is not split out there), cache -> cache_read,
total - input - output - cache -> cache_write (Anthropic totals also count cache writes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apiflow.analysis.trials import Trials
from apiflow.results.prices import PRICE_KINDS, PriceTable


@dataclass(frozen=True)
class Costs:
    """Per-trial cost in USD (NaN where unpriced) and where it came from."""

    usd: np.ndarray
    source: str  # "recorded", "price table <version>", or a mix
    unpriced_models: list[str]


def token_kinds(trials: Trials) -> dict[str, np.ndarray]:
    """Token counts per priced kind for every trial (see module docstring for the published mapping)."""
    col = trials.columns
    zeros = np.zeros(trials.n)

    def get(name: str) -> np.ndarray:
        return np.nan_to_num(col.get(name, zeros), nan=0.0)

    detailed = ~np.isnan(col.get("tokens_cache_read", np.full(trials.n, np.nan)))
    published_write = np.maximum(
        get("tokens_total") - get("tokens_input") - get("tokens_output") - get("tokens_cache"), 0
    )
    return {
        "input": get("tokens_input"),
        "output": get("tokens_output"),
        "cache_read": np.where(detailed, get("tokens_cache_read"), get("tokens_cache")),
        "cache_write": np.where(detailed, get("tokens_cache_write"), published_write),
        "reasoning": np.where(detailed, get("tokens_reasoning"), 0.0),
    }


def _price_key(trials: Trials, index: int, table: PriceTable) -> str | None:
    # The leaderboard slug first, then the provider route (``model_api``: a litellm id, or
    # ``apiflow/sim:<profile>`` for our offline models, whose slugs are path-safe renderings).
    routes = trials.columns.get("model_api")
    candidates = [trials.models[index]]
    if routes is not None:
        candidates += sorted({str(r) for r in routes[trials.model == index] if r})
    return next((key for key in candidates if table.has(key)), None)


def priced_costs(trials: Trials, table: PriceTable) -> tuple[np.ndarray, list[str]]:
    """Tokens x prices for every trial; NaN for models the table does not price."""
    kinds = token_kinds(trials)
    usd = np.full(trials.n, np.nan)
    unpriced = []
    for index, model in enumerate(trials.models):
        key = _price_key(trials, index, table)
        if key is None:
            unpriced.append(model)
            continue
        prices = table.price(key)
        rows = trials.model == index
        total = sum(kinds[kind][rows] * getattr(prices, kind) for kind in PRICE_KINDS)
        usd[rows] = np.round(total / 1_000_000, 9)
    return usd, unpriced


def trial_costs(trials: Trials, table: PriceTable | None, *, reprice: bool) -> Costs:
    """Per-trial cost: recorded where present (unless ``reprice``), else priced from tokens."""
    recorded = trials.columns.get("cost_usd", np.full(trials.n, np.nan))
    if table is None:
        missing = sorted({trials.models[m] for m in np.unique(trials.model[np.isnan(recorded)])})
        return Costs(recorded, "recorded", missing)
    priced, unpriced = priced_costs(trials, table)
    if reprice:
        return Costs(priced, f"price table {table.version}", unpriced)
    usd = np.where(np.isnan(recorded), priced, recorded)
    missing = np.isnan(recorded)
    source = "recorded" if not missing.any() else f"recorded + price table {table.version}"
    if missing.all():
        source = f"price table {table.version}"
    still = sorted({trials.models[m] for m in np.unique(trials.model[np.isnan(usd)])})
    return Costs(usd, source, still)


def mean_cost_by_model(trials: Trials, costs: Costs, mask: np.ndarray) -> np.ndarray:
    """Mean USD per trial of each model over ``mask`` (every trial run costs, scored or not)."""
    out = np.full(len(trials.models), np.nan)
    for index in range(len(trials.models)):
        values = costs.usd[mask & (trials.model == index)]
        if values.size and not np.isnan(values).any():
            out[index] = float(values.mean())
    return out


def pareto_frontier(cost: np.ndarray, rate: np.ndarray) -> list[int]:
    """Indices of the points no other point beats (cheaper-or-equal and better-or-equal, one strictly),
    ordered by cost. Points with NaN cost or rate are left out."""
    ok = np.flatnonzero(~np.isnan(cost) & ~np.isnan(rate))
    frontier = []
    for i in ok:
        dominated = any(
            cost[j] <= cost[i] and rate[j] >= rate[i] and (cost[j] < cost[i] or rate[j] > rate[i]) for j in ok
        )
        if not dominated:
            frontier.append(int(i))
    return sorted(frontier, key=lambda i: (cost[i], -rate[i]))
