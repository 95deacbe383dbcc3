"""The estimate a grid prints before it spends: dollars per model with an interval, and hours.

Dollars come from token profiles fitted to the published trials (``apiflow.analysis.token_profile``):
per model, task kind and length, under the grid's own caching setting and price table. A model the
corpus lacks is estimated from the panel's mean over models, and said to be. Hours are the larger of
two bounds: the provider's rate limits (calls and counted tokens per minute, per provider key) and
the trials' own latency spread over the grid's concurrent trial slots.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field

from apiflow.analysis.token_profile import ModelEstimate, TokenProfile, estimate, published_profile
from apiflow.models.caching import caches_prompt, limit_counts_cache_reads
from apiflow.results.prices import Prices
from apiflow.results.taskid import parse_task_id
from cluster.plan import PlannedTrial
from cluster.spec import GridModel, GridSpec


@dataclass
class GridEstimate:
    """What ``estimate_grid`` found, ready to print."""

    planned: int
    todo: int
    per_model: dict[str, ModelEstimate | int] = field(default_factory=dict)
    """Slug -> the estimate, or the trial count alone for a model that costs nothing."""
    hours: float = 0.0
    bound: str = ""
    """What sets ``hours``: a provider's rate limit, or the trials' latency over the slots."""
    profile_trials: int = 0

    @property
    def usd(self) -> float:
        return sum(e.usd for e in self.per_model.values() if isinstance(e, ModelEstimate))

    @property
    def interval(self) -> tuple[float, float]:
        """The total's 90 % interval: the models' intervals added (their errors are not independent)."""
        found = [e for e in self.per_model.values() if isinstance(e, ModelEstimate)]
        return sum(e.low for e in found), sum(e.high for e in found)


def _free(prices: Prices) -> bool:
    return not any(prices.model_dump().values())


def estimate_grid(spec: GridSpec, todo: list[PlannedTrial], prices: list[Prices], planned: int) -> GridEstimate:
    """The grid's expected bill and wall time for the ``todo`` trials."""
    places: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for trial in todo:
        ref = parse_task_id(trial.task_id)
        places[trial.model_index].append((ref.kind, ref.length))
    result = GridEstimate(planned, len(todo))
    paid = [i for i, m in enumerate(spec.models) if not m.offline and not _free(prices[i]) and places[i]]
    profile = None
    if paid:  # the published table is read only when something costs money
        profile = published_profile()
        result.profile_trials = profile.trials
    calls: dict[str, float] = defaultdict(float)
    tokens: dict[str, float] = defaultdict(float)
    seconds = 0.0
    for index, model in enumerate(spec.models):
        if profile is None or index not in paid:
            result.per_model[model.slug] = len(places[index])
            continue
        caching = caches_prompt(model.model, model.params)
        found = estimate(profile, model.slug, places[index], prices[index], caching=caching)
        if found.source == "panel" and profile.model_name(model.model) is not None:
            found = estimate(profile, model.model, places[index], prices[index], caching=caching)
        result.per_model[model.slug] = found
        if model.tier == "batch":  # every turn waits for a batch to fill and end; no request limit
            seconds += found.calls * batch_turn_s(model)
            continue
        calls[model.provider] += found.calls
        counted = found.prompt_tokens + found.output_tokens
        if caching and not limit_counts_cache_reads(model.model):
            counted -= _cache_read_share(profile, model) * found.prompt_tokens
        tokens[model.provider] += counted
        seconds += found.seconds
    _set_hours(spec, result, calls, tokens, seconds)
    return result


def batch_turn_s(model: GridModel) -> float:
    """A batch-tier turn's expected wait: its batch fills (at most ``wait_s``), the provider ends it
    (``expected_s``), the next poll sees it (half of ``poll_s`` on average)."""
    b = model.batching
    return b.wait_s + b.expected_s + b.poll_s / 2


def expected_costs(
    spec: GridSpec, todo: list[PlannedTrial], prices: list[Prices]
) -> tuple[dict[tuple[int, str, int], float], frozenset[int]]:
    """Per (model index, task kind, length) of the ``todo`` trials: a trial's expected cost, what the
    budget admits trials by (``cluster.budget``); and the models whose costs are the panel's guess
    (the published corpus lacks them). A free model costs nothing."""
    needed: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for trial in todo:
        ref = parse_task_id(trial.task_id)
        needed[trial.model_index].add((ref.kind, ref.length))
    out: dict[tuple[int, str, int], float] = {}
    guessed: set[int] = set()
    profile = None
    for index, places in needed.items():
        model = spec.models[index]
        if _free(prices[index]):
            out.update({(index, *place): 0.0 for place in places})
            continue
        if profile is None:
            profile = published_profile()
        caching = caches_prompt(model.model, model.params)
        name = profile.model_name(model.slug) or profile.model_name(model.model)
        if name is None:
            guessed.add(index)
        for kind, length in places:
            cell, _ = profile.cell(name, kind, length)
            out[(index, kind, length)] = cell.cost(prices[index], caching)[0]
    return out, frozenset(guessed)


def _cache_read_share(profile: TokenProfile, model: GridModel) -> float:
    """The share of a Claude model's prompt read from cache in its published trials (0.9 if unknown)."""
    name = profile.model_name(model.slug) or profile.model_name(model.model)
    cells = [c for (m, _k), c in profile.kinds.items() if m == name]
    prompt = sum(c.n * (c.mean[0] + c.mean[2] + c.mean[3]) for c in cells)
    return sum(c.n * c.mean[2] for c in cells) / prompt if prompt else 0.9


def _set_hours(
    spec: GridSpec, result: GridEstimate, calls: dict[str, float], tokens: dict[str, float], seconds: float
) -> None:
    slots = (spec.concurrency.actors or os.cpu_count() or 1) * spec.concurrency.trials_per_actor
    result.hours, result.bound = seconds / slots / 3600, f"latency over {slots} trial slots"
    waits = sorted({batch_turn_s(m) for m in spec.models if m.tier == "batch"})
    if waits:
        result.bound += f" (a batch-tier turn waits ~{_duration(waits[-1] / 3600)} for its batch)"
    for provider, n in calls.items():
        limit = spec.ratelimits.get(provider)
        if limit is None:
            continue
        minutes = n / (limit.rpm * limit.headroom)
        why = f"{provider} requests ({limit.rpm:g}/min)"
        if limit.tpm is not None and tokens[provider] / (limit.tpm * limit.headroom) > minutes:
            minutes, why = tokens[provider] / (limit.tpm * limit.headroom), f"{provider} tokens ({limit.tpm:g}/min)"
        if minutes / 60 > result.hours:
            result.hours, result.bound = minutes / 60, why


def estimate_lines(spec: GridSpec, found: GridEstimate) -> list[str]:
    """The estimate as the user reads it, before the run starts."""
    low, high = found.interval
    head = (
        f"grid {spec.name}: {found.planned} trials planned, {found.planned - found.todo} already stored, "
        f"{found.todo} to run; estimated cost ${found.usd:,.2f}"
    )
    if found.profile_trials:
        head += (
            f" (90% interval ${low:,.2f}-${high:,.2f}; token profiles of {found.profile_trials:,} published "
            f"trials by model, task kind and length)"
        )
    lines = [head]
    for slug, item in found.per_model.items():
        if isinstance(item, int):
            if item:
                lines.append(f"  {slug}: {item} trials, ~$0.00")
            continue
        if not item.trials:
            continue
        note = {"cell": "", "model-kind": " (some lengths from the model's other lengths)",
                "panel": " (not in the published corpus: the panel's mean over models, a wide interval)"}[item.source]  # fmt: skip
        lines.append(
            f"  {slug}: {item.trials} trials, ~${item.usd:,.2f} [${item.low:,.2f}-${item.high:,.2f}], "
            f"~{item.calls:,.0f} calls{note}"
        )
    if found.hours:
        lines.append(f"  expected wall time ~{_duration(found.hours)}, bound by {found.bound}")
    if spec.budget_usd is not None:
        if found.usd <= spec.budget_usd:
            verdict = "fits" if high <= spec.budget_usd else "fits, but the interval's top end exceeds it"
        else:
            verdict = "EXCEEDS: the run will stop when the budget is reached"
        lines.append(f"  budget ${spec.budget_usd:,.2f}: estimate {verdict}")
    return lines


def _duration(hours: float) -> str:
    if hours < 1 / 60:
        return f"{hours * 3600:.0f} s"
    if hours < 1:
        return f"{hours * 60:.0f} min"
    return f"{hours:.1f} h"
