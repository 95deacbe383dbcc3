"""Every number of a report, as one JSON-ready dict (``summary.json``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apiflow.analysis import reach
from apiflow.analysis.bootstrap import WorldResamples, ci, interval, resample_worlds
from apiflow.analysis.cost import mean_cost_by_model, pareto_frontier, trial_costs
from apiflow.analysis.failures import composition, failure_classes
from apiflow.analysis.null_model import null_model, world_sums
from apiflow.analysis.outcomes import outcome_table
from apiflow.analysis.screen import screen_cells
from apiflow.analysis.served import served_cells
from apiflow.analysis.slices import SliceStats, paired_differences, slice_stats
from apiflow.analysis.trials import Trials
from apiflow.analysis.variation import variance_split, world_model_table
from apiflow.results.prices import PriceTable

SUMMARY_VERSION = 1


@dataclass(frozen=True)
class ReportOptions:
    """Knobs of one report."""

    bootstrap: int = 10_000
    seed: int = 0
    prices: PriceTable | None = None
    reprice: bool = False


def summarize(trials: Trials, options: ReportOptions) -> dict:
    """Compute every statistic of the report on ``trials``."""
    resamples = resample_worlds(len(trials.worlds), options.bootstrap, options.seed)
    screen = screen_cells(trials)
    clean = screen.clean(trials)
    chain_lengths = sorted({int(k) for k in np.unique(trials.length[trials.chain])})
    headline_k = chain_lengths[-1] if chain_lengths else None
    headline = trials.chain & (trials.length == headline_k) if headline_k else np.zeros(trials.n, bool)
    classes = failure_classes(trials)
    solo = slice_stats(trials, trials.solo, resamples)
    head_incl = slice_stats(trials, headline, resamples)
    head_clean = slice_stats(trials, headline & clean, resamples)
    return {
        "summary_version": SUMMARY_VERSION,
        "meta": _meta(trials, options),
        "outcomes": outcome_table(trials),
        "served": served_cells(trials),
        "pass_rates": _pass_rates(trials, resamples, solo, clean, chain_lengths),
        "screen": screen.as_dict(),
        "headline": {
            "length": headline_k,
            "inclusive": head_incl.as_dict(trials),
            "clean": head_clean.as_dict(trials),
        },
        "reach": _reach(trials, resamples, np.ones(trials.n, bool)),
        "reach_chains": {
            "inclusive": _reach(trials, resamples, trials.chain),
            "clean": _reach(trials, resamples, trials.chain & clean),
        },
        "separation": {
            "solo": solo.spread(trials),
            "headline_inclusive": head_incl.spread(trials),
            "headline_clean": head_clean.spread(trials),
            "gap_to_best": {
                "solo": paired_differences(solo, trials),
                "headline_inclusive": paired_differences(head_incl, trials),
            },
        },
        "null_model": _null(trials, resamples, clean, chain_lengths, headline, headline_k),
        "failures": {
            "all": composition(trials, np.ones(trials.n, bool), classes),
            "solo": composition(trials, trials.solo, classes),
            "chains_inclusive": composition(trials, trials.chain, classes),
            "chains_clean": composition(trials, trials.chain & clean, classes),
            "headline_inclusive": composition(trials, headline, classes),
            "headline_clean": composition(trials, headline & clean, classes),
        },
        "cost": _cost(trials, options),
        "variation": _variation(trials, headline, clean),
    }


def _pass_rates(
    trials: Trials, resamples: WorldResamples, solo: SliceStats, clean: np.ndarray, lengths: list[int]
) -> dict:
    def stats(mask: np.ndarray) -> dict:
        return slice_stats(trials, mask, resamples).as_dict(trials)

    return {
        "all": stats(np.ones(trials.n, bool)),
        "solo": solo.as_dict(trials),
        "chains": {"inclusive": stats(trials.chain), "clean": stats(trials.chain & clean)},
        "by_length": {
            str(k): {
                "inclusive": stats(trials.chain & (trials.length == k)),
                "clean": stats(trials.chain & (trials.length == k) & clean),
            }
            for k in lengths
        },
    }


def _meta(trials: Trials, options: ReportOptions) -> dict:
    unscored = trials.unscored
    return {
        "trials": trials.n,
        "models": trials.models,
        "worlds": trials.worlds,
        "tasks": len(trials.tasks),
        "solo_tasks": int(len(np.unique(trials.task[trials.solo]))),
        "chain_tasks": int(len(np.unique(trials.task[trials.chain]))),
        "panels": sorted({p for p in trials.columns["panel"] if p}),
        "convention": "count_unscored" if trials.count_unscored else "scored_only",
        "counted_trials": int(trials.counted.sum()),
        "unscored": {
            "total": int(unscored.sum()),
            "no_verdict": int((unscored & ~trials.harness).sum()),
            "harness": int(trials.harness.sum()),
            "by_model": {
                trials.models[m]: int(c)
                for m, c in enumerate(
                    np.bincount(trials.model, weights=unscored, minlength=len(trials.models))
                )
                if c
            },
        },
        "bootstrap": {
            "resamples": options.bootstrap,
            "seed": options.seed,
            "level": 0.90,
            "clusters": "worlds",
        },
    }


def _reach(trials: Trials, resamples: WorldResamples, mask: np.ndarray) -> dict:
    # The design's epochs come from the whole set, so a slice is judged against the same E.
    epochs = reach.task_counts(trials, np.ones(trials.n, bool)).epochs
    counts = reach.task_counts(trials, mask)
    per_task = {"best_of": reach.best_of(counts), "all_of": reach.all_of(counts, epochs)}
    for k in range(1, min(reach.K_MAX, max(epochs, 1)) + 1):
        per_task[f"pass@{k}"] = reach.pass_at_k(counts.c, counts.n, k)
        per_task[f"pass^{k}"] = reach.pass_hat_k(counts.c, counts.n, k)
    out: dict = {"epochs": epochs, "tasks_per_model": {}, "models": {}, "spread": {}}
    present = counts.present.any(axis=1)
    if not present.any():
        return out
    for name, values in per_task.items():
        sums, tasks = reach.world_sums(values, counts.world_of_task, len(trials.worlds))
        point = np.where(tasks.sum(0) > 0, sums.sum(0) / np.maximum(tasks.sum(0), 1), np.nan)
        bands = interval(resamples.ratio(sums, tasks))
        for m in np.flatnonzero(present):
            entry = out["models"].setdefault(trials.models[m], {})
            entry[name] = {"value": float(point[m]), "ci90": [_num(bands[0][m]), _num(bands[1][m])]}
        values_present = point[present]
        out["spread"][name] = {
            "min": float(np.nanmin(values_present)),
            "max": float(np.nanmax(values_present)),
            "points": float(100 * (np.nanmax(values_present) - np.nanmin(values_present))),
        }
    for m in np.flatnonzero(present):
        out["tasks_per_model"][trials.models[m]] = int(counts.present[m].sum())
    return out


def _num(x) -> float | None:
    x = float(x)
    return None if x != x else x


def _null_slice(trials: Trials, model, mask: np.ndarray, resamples: WorldResamples) -> dict:
    sums = world_sums(trials, model, mask)
    n = sums["trials"].sum()
    if n == 0:
        return {"trials": 0, "observed": None, "predicted": None, "gap_points": None, "ratio": None}
    observed = resamples.ratio(sums["observed"], sums["trials"])
    predicted = resamples.ratio(sums["predicted"], sums["trials"])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio_samples = observed / predicted
    obs, pred = sums["observed"].sum() / n, sums["predicted"].sum() / n
    return {
        "trials": int(n),
        "unpredictable": int((mask & trials.counted & trials.chain).sum() - n),
        "observed": float(obs),
        "observed_ci90": ci(observed),
        "predicted": float(pred),
        "predicted_ci90": ci(predicted),
        "gap_points": float(100 * (obs - pred)),
        "gap_points_ci90": [None if v is None else 100 * v for v in ci(observed - predicted)],
        "ratio": float(obs / pred) if pred > 0 else None,
        "ratio_ci90": ci(ratio_samples),
    }


def _null(trials, resamples, clean, lengths, headline, headline_k) -> dict:
    model = null_model(trials)
    by_length = {
        str(k): {
            "inclusive": _null_slice(trials, model, trials.chain & (trials.length == k), resamples),
            "clean": _null_slice(trials, model, trials.chain & (trials.length == k) & clean, resamples),
        }
        for k in lengths
    }
    return {
        "by_length": by_length,
        "chains_inclusive": _null_slice(trials, model, trials.chain, resamples),
        "chains_clean": _null_slice(trials, model, trials.chain & clean, resamples),
        "headline_inclusive": _null_slice(trials, model, headline, resamples),
        "headline_clean": _null_slice(trials, model, headline & clean, resamples),
        "headline_length": headline_k,
    }


def _cost(trials: Trials, options: ReportOptions) -> dict:
    costs = trial_costs(trials, options.prices, reprice=options.reprice)
    everything = np.ones(trials.n, bool)
    mean_cost = mean_cost_by_model(trials, costs, everything)
    stats = slice_stats(trials, everything, resample_worlds(len(trials.worlds), 0, 0))
    rates = np.array([r.rate for r in stats.per_model])
    frontier = pareto_frontier(mean_cost, rates)
    return {
        "source": costs.source,
        "price_table": None
        if options.prices is None
        else {"version": options.prices.version, "sha256": options.prices.hash},
        "unpriced_models": costs.unpriced_models,
        "total_usd": _num(np.nansum(costs.usd)) if not np.isnan(costs.usd).all() else None,
        "models": [
            {
                "model": trials.models[m],
                "mean_usd_per_trial": _num(mean_cost[m]),
                "pass_rate": _num(rates[m]),
                "usd_per_pass": _num(np.nansum(costs.usd[trials.model == m]) / stats.per_model[m].passes)
                if stats.per_model[m].passes and not np.isnan(mean_cost[m])
                else None,
            }
            for m in range(len(trials.models))
        ],
        "pareto_frontier": [trials.models[i] for i in frontier],
    }


def _variation(trials: Trials, headline: np.ndarray, clean: np.ndarray) -> dict:
    table, counted = world_model_table(trials, np.ones(trials.n, bool))
    head_table, _ = world_model_table(trials, headline)
    return {
        "world_model_pass_rate": {
            trials.worlds[w]: {trials.models[m]: _num(table[w, m]) for m in range(len(trials.models))}
            for w in range(len(trials.worlds))
        },
        "headline_inclusive": variance_split(head_table),
        "headline_clean": variance_split(world_model_table(trials, headline & clean)[0]),
        "all_trials": variance_split(table),
    }
