"""Pass-rate statistics of one slice of trials, with world-bootstrap intervals."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apiflow.analysis.bootstrap import WorldResamples, ci, interval
from apiflow.analysis.rates import Rate, rate_of, world_model_counts
from apiflow.analysis.separation import spread, spread_samples
from apiflow.analysis.trials import Trials


@dataclass(frozen=True)
class SliceStats:
    """A slice's pooled and per-model pass rates with their resamples (kept for paired statistics)."""

    pooled: Rate
    per_model: list[Rate]
    pooled_samples: np.ndarray  # (B,)
    model_samples: np.ndarray  # (B, M)
    worlds: int

    def as_dict(self, trials: Trials) -> dict:
        """JSON-ready form: pooled rate + CI, per-model rates + CIs, model spread."""
        bands = interval(self.model_samples)
        models = []
        for index, rate in enumerate(self.per_model):
            if rate.trials == 0 and rate.unscored == 0:
                continue
            entry = {"model": trials.models[index], **rate.as_dict()}
            entry["ci90"] = [_num(bands[0][index]), _num(bands[1][index])]
            models.append(entry)
        return {
            **self.pooled.as_dict(),
            "ci90": ci(self.pooled_samples),
            "worlds": self.worlds,
            "per_model": models,
            "spread": self.spread(trials),
        }

    def spread(self, trials: Trials) -> dict:
        """Max - min of per-model rates, in points and log-odds, with bootstrap intervals."""
        rates = np.array([r.rate for r in self.per_model])
        counts = np.array([r.trials for r in self.per_model])
        out = spread(rates, counts)
        for key in ("max_model_index", "min_model_index"):
            index = out.pop(key)
            out[key.replace("_index", "")] = trials.models[index] if index is not None else None
        present = counts > 0
        if present.sum() >= 2 and self.model_samples.shape[0]:
            points, odds = spread_samples(self.model_samples[:, present])
            out["points_ci90"], out["log_odds_ci90"] = ci(points), ci(odds)
        return out


def _num(x) -> float | None:
    x = float(x)
    return None if x != x else x


def slice_stats(trials: Trials, mask: np.ndarray, resamples: WorldResamples) -> SliceStats:
    """Pooled and per-model pass rates of ``mask`` with world-bootstrap samples."""
    passes, counted = world_model_counts(trials, mask)
    worlds = int((counted.sum(1) > 0).sum())
    unscored = np.bincount(trials.model, weights=(trials.unscored & mask), minlength=len(trials.models))
    per_model = [
        Rate(int(p), int(n), int(u)) for p, n, u in zip(passes.sum(0), counted.sum(0), unscored, strict=True)
    ]
    return SliceStats(
        pooled=rate_of(trials, mask),
        per_model=per_model,
        pooled_samples=resamples.ratio(passes.sum(1), counted.sum(1)),
        model_samples=resamples.ratio(passes, counted),
        worlds=worlds,
    )


def paired_differences(stats: SliceStats, trials: Trials) -> list[dict]:
    """Each model's gap to the slice's best model, with a paired (same worlds) bootstrap interval."""
    rates = np.array([r.rate for r in stats.per_model])
    present = np.array([r.trials > 0 for r in stats.per_model])
    if present.sum() < 2:
        return []
    best = int(np.nanargmax(np.where(present, rates, np.nan)))
    out = []
    for index in np.flatnonzero(present):
        if index == best:
            continue
        delta = stats.model_samples[:, best] - stats.model_samples[:, index]
        out.append(
            {
                "model": trials.models[index],
                "vs": trials.models[best],
                "points": float(100 * (rates[best] - rates[index])),
                "points_ci90": [None if v is None else 100 * v for v in ci(delta)],
            }
        )
    return out
