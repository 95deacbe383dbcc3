"""Ranking stability across regenerated private splits (issue 10 §3).

The question: a panel ranked on one private split, would it be ranked the same on another split
generated with a different seed? Two sources of noise are compared:

* **regeneration noise**: the spread of each model's rank across splits (different worlds, tasks
  and storylines drawn by ``apiflow bank build --seed S``), and Kendall's τ-b between splits;
* **world-sampling noise**: within one split, the world cluster bootstrap that ``apiflow report``
  uses for its intervals (``apiflow.analysis.bootstrap``), applied to ranks.

If the bootstrap is an honest measure of how much a ranking could move, the across-split rank
spread stays inside the within-split bootstrap rank intervals. Everything here is a pure function
of per-split (world, model) pass/count tables, so tests feed it synthetic tables.

Ranking metric: the overall pass rate (every counted trial of the split), which is what orders
``apiflow report``'s leaderboard (``apiflow.analysis.document.leaderboard_table``). Ranks are
fractional: rank 1 is the highest rate; tied models share the mean of their ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from apiflow.analysis.bootstrap import LEVEL, interval, resample_worlds
from apiflow.analysis.rates import world_model_counts
from apiflow.analysis.trials import Trials

METRIC = "overall pass rate (all counted trials; the order of `apiflow report`'s leaderboard)"


@dataclass(frozen=True)
class SplitCounts:
    """One split's passes and counted trials per (world, model): arrays of shape (W, M)."""

    name: str
    models: list[str]
    passes: np.ndarray
    counted: np.ndarray

    @property
    def rates(self) -> np.ndarray:
        """Overall pass rate per model (NaN for a model without counted trials)."""
        n = self.counted.sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, self.passes.sum(0) / np.where(n > 0, n, 1), np.nan)

    def select(self, models: list[str]) -> SplitCounts:
        """The same split restricted to (and ordered by) ``models``."""
        index = [self.models.index(m) for m in models]
        return SplitCounts(self.name, list(models), self.passes[:, index], self.counted[:, index])


def split_counts(name: str, trials: Trials, rename=None) -> SplitCounts:
    """Per-(world, model) counts of every counted trial; ``rename`` maps model slugs (e.g. to the
    published slug a calibrated sim stands for)."""
    passes, counted = world_model_counts(trials, np.ones(trials.n, bool))
    models = [rename(m) if rename else m for m in trials.models]
    return SplitCounts(name, models, passes, counted)


def fractional_ranks(scores: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 = highest score, ties share their mean rank; NaN ranks last.

    Works on (M,) or (B, M): ``1 + #higher + #equal_others / 2`` (exact for ties, vectorised).
    """
    s = np.where(np.isnan(scores), -np.inf, scores)
    higher = (s[..., None, :] > s[..., :, None]).sum(-1)
    equal = (s[..., None, :] == s[..., :, None]).sum(-1) - 1
    return 1.0 + higher + 0.5 * equal


def _signs(ranks: np.ndarray) -> np.ndarray:
    """Upper-triangle pair signs sign(r_i - r_j), i < j, along the last axis: (..., M(M-1)/2)."""
    i, j = np.triu_indices(ranks.shape[-1], k=1)
    return np.sign(ranks[..., i] - ranks[..., j])


def tau_b_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between score (or rank) vectors along the last axis; broadcasts over leading axes.

    τ-b = (concordant - discordant) / sqrt((n0 - ties_x) (n0 - ties_y)); NaN where either side is
    all ties (the coefficient is undefined there).
    """
    a, b = _signs(np.asarray(x, float)), _signs(np.asarray(y, float))
    num = (a * b).sum(-1)
    den = np.sqrt((a != 0).sum(-1) * (b != 0).sum(-1).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(den > 0, num / np.where(den > 0, den, 1), np.nan))


def kendall_tau_b(x, y) -> float:
    """Kendall's τ-b between two score (or rank) vectors (``tau_b_rows`` for one pair)."""
    return float(tau_b_rows(np.asarray(x, float), np.asarray(y, float)))


@dataclass(frozen=True)
class BootstrapRanks:
    """World-bootstrap ranks of one split: point ranks (M,) and resampled ranks (B, M)."""

    point: np.ndarray
    samples: np.ndarray

    def band(self, level: float = LEVEL) -> np.ndarray:
        """Percentile rank interval per model: (2, M)."""
        return interval(self.samples, level)

    def sd(self) -> np.ndarray:
        """Bootstrap SD of each model's rank."""
        return (
            self.samples.std(axis=0, ddof=1)
            if self.samples.shape[0] > 1
            else np.full(len(self.point), np.nan)
        )

    def flip(self, a: int, b: int) -> float:
        """Share of resamples that reverse the split's own order of models ``a`` and ``b`` (ties: half)."""
        if self.samples.shape[0] == 0:
            return float("nan")
        return _reversed_share(self.point[a] - self.point[b], self.samples[:, a] - self.samples[:, b])

    def disagree(self, a: int, b: int) -> float:
        """Chance that two independent resamples order ``a`` and ``b`` differently: 2π(1 - π), with π
        the share putting ``a`` above ``b`` (ties: half) — the within-split analogue of two splits."""
        if self.samples.shape[0] == 0:
            return float("nan")
        delta = self.samples[:, a] - self.samples[:, b]
        above = float(np.mean(delta < 0) + 0.5 * np.mean(delta == 0))
        return 2.0 * above * (1.0 - above)

    def tau_between_resamples(self) -> np.ndarray:
        """τ-b between independent pairs of resamples (first half vs second half): what two world
        samples of the *same* generator split agree on, the within-split analogue of split-vs-split τ."""
        half = self.samples.shape[0] // 2
        return tau_b_rows(self.samples[:half], self.samples[half : 2 * half])


def _reversed_share(reference: float, deltas: np.ndarray) -> float:
    """Share of ``deltas`` whose sign is opposite to ``reference`` (a tie counts a half)."""
    if reference == 0:
        return 0.5  # the split itself ties them: any order is as likely reversed as not
    opposite = np.sign(deltas) == -np.sign(reference)
    return float(np.mean(opposite) + 0.5 * np.mean(deltas == 0))


def bootstrap_ranks(split: SplitCounts, b: int, seed: int) -> BootstrapRanks:
    """Ranks under ``b`` seeded world cluster resamples of the split (same draws as the report's)."""
    resamples = resample_worlds(split.passes.shape[0], b, seed)
    rates = resamples.ratio(split.passes, split.counted)
    return BootstrapRanks(fractional_ranks(split.rates), fractional_ranks(rates))


def common_models(splits: list[SplitCounts]) -> list[str]:
    """Models present (with counted trials) in every split, sorted."""
    sets = [{m for m, n in zip(s.models, s.counted.sum(0), strict=True) if n > 0} for s in splits]
    return sorted(set.intersection(*sets)) if sets else []


def stability(
    splits: list[SplitCounts],
    references: dict[str, dict[str, float]] | None = None,
    *,
    bootstrap: int = 10_000,
    seed: int = 0,
    level: float = LEVEL,
) -> dict:
    """Every figure of the stability report as one JSON-ready dict.

    Args:
        splits: the regenerated splits (at least two), each a per-(world, model) table.
        references: named rankings to compare with (e.g. ``published``, ``bank/v1``): model -> rate.
        bootstrap: world resamples per split; each split uses the same ``seed`` (as the report does).
    """
    if len(splits) < 2:
        raise ValueError("ranking stability needs at least two splits")
    models = common_models(splits)
    tables = [s.select(models) for s in splits]
    rates = np.array([t.rates for t in tables])  # (S, M)
    ranks = fractional_ranks(rates)
    boots = [bootstrap_ranks(t, bootstrap, seed) for t in tables]
    bands = np.array([bt.band(level) for bt in boots])  # (S, 2, M)
    consensus_rates = rates.mean(0)
    consensus = fractional_ranks(consensus_rates)
    order = [int(i) for i in np.argsort(consensus, kind="stable")]
    pairs = [(a, b) for a, b in combinations(range(len(tables)), 2)]
    taus = [kendall_tau_b(ranks[a], ranks[b]) for a, b in pairs]
    split_tau = [
        {"a": tables[a].name, "b": tables[b].name, "tau_b": t} for (a, b), t in zip(pairs, taus, strict=True)
    ]
    out = {
        "metric": METRIC,
        "models": models,
        "bootstrap": {"resamples": bootstrap, "seed": seed, "level": level, "clusters": "worlds"},
        "splits": [_split_entry(t, ranks[s], boots[s], bands[s], level) for s, t in enumerate(tables)],
        "tau": {"pairs": split_tau, **_summary(taus)},
        "tau_within": _tau_within(boots, tables),
        "references": _references(references or {}, models, tables, ranks, consensus_rates),
        "per_model": [_model_entry(models[m], m, ranks, boots, bands, consensus) for m in order],
        "adjacent_pairs": _adjacent(order, models, ranks, boots),
    }
    out["summary"] = _overall(out, ranks, boots)
    return out


def _summary(values: list[float]) -> dict:
    v = np.array([x for x in values if x == x], dtype=float)
    if not len(v):
        return {"min": None, "mean": None, "max": None}
    return {"min": float(v.min()), "mean": float(v.mean()), "max": float(v.max())}


def _split_entry(
    t: SplitCounts, ranks: np.ndarray, boot: BootstrapRanks, band: np.ndarray, level: float
) -> dict:
    sd = boot.sd()
    return {
        "name": t.name,
        "worlds": int(t.passes.shape[0]),
        "trials": int(t.counted.sum()),
        "models": {
            m: {
                "rate": float(t.rates[i]),
                "rank": float(ranks[i]),
                "rank_ci": [float(band[0][i]), float(band[1][i])],
                "rank_sd_bootstrap": float(sd[i]),
            }
            for i, m in enumerate(t.models)
        },
    }


def _tau_within(boots: list[BootstrapRanks], tables: list[SplitCounts]) -> dict:
    per_split = {}
    for t, bt in zip(tables, boots, strict=True):
        tau = bt.tau_between_resamples()
        tau = tau[~np.isnan(tau)]
        per_split[t.name] = {
            "mean": float(tau.mean()) if len(tau) else None,
            "p05": float(np.quantile(tau, 0.05)) if len(tau) else None,
        }
    means = [v["mean"] for v in per_split.values() if v["mean"] is not None]
    return {"per_split": per_split, "mean": float(np.mean(means)) if means else None}


def _references(
    references: dict[str, dict[str, float]],
    models: list[str],
    tables: list[SplitCounts],
    ranks: np.ndarray,
    consensus_rates: np.ndarray,
) -> dict:
    out = {}
    for name, rates in references.items():
        shared = [i for i, m in enumerate(models) if m in rates and rates[m] == rates[m]]
        if len(shared) < 2:
            out[name] = {"models": len(shared), "note": "fewer than two models in common"}
            continue
        ref = np.array([rates[models[i]] for i in shared])
        # ranks recomputed over the shared models only, so every τ compares like with like
        per_split = {
            t.name: kendall_tau_b(fractional_ranks(ref), fractional_ranks(t.rates[shared])) for t in tables
        }
        out[name] = {
            "models": len(shared),
            "ranks": dict(zip([models[i] for i in shared], fractional_ranks(ref).tolist(), strict=True)),
            "tau_b_per_split": per_split,
            **_summary(list(per_split.values())),
            "tau_b_vs_consensus": kendall_tau_b(
                fractional_ranks(ref), fractional_ranks(consensus_rates[shared])
            ),
        }
    return out


def _model_entry(
    model: str,
    m: int,
    ranks: np.ndarray,
    boots: list[BootstrapRanks],
    bands: np.ndarray,
    consensus: np.ndarray,
) -> dict:
    r = ranks[:, m]
    s = len(r)
    # Coverage: does split t's rank fall inside split s's bootstrap interval (every s != t)?
    inside = [bands[a, 0, m] <= r[b] <= bands[a, 1, m] for a in range(s) for b in range(s) if a != b]
    boot_sd = float(np.mean([bt.sd()[m] for bt in boots]))
    spread_sd = float(r.std(ddof=1))
    return {
        "model": model,
        "consensus_rank": float(consensus[m]),
        "ranks": r.tolist(),
        "rank_min": float(r.min()),
        "rank_max": float(r.max()),
        "rank_sd": spread_sd,
        "bootstrap_rank_sd": boot_sd,
        "bootstrap_band_union": [float(bands[:, 0, m].min()), float(bands[:, 1, m].max())],
        "within_union": bool(bands[:, 0, m].min() <= r.min() and r.max() <= bands[:, 1, m].max()),
        "coverage": float(np.mean(inside)),
    }


def _adjacent(
    order: list[int], models: list[str], ranks: np.ndarray, boots: list[BootstrapRanks]
) -> list[dict]:
    """Each neighbouring pair of the consensus order: how often splits reverse it, vs the bootstrap."""
    out = []
    for a, b in zip(order, order[1:], strict=False):
        delta = ranks[:, a] - ranks[:, b]
        # across: the share of split pairs that order a and b differently (a tie on one side: half)
        disagree = [_disagree(delta[s], delta[t]) for s, t in combinations(range(len(delta)), 2)]
        # vs consensus: the share of splits that put b above a (the consensus puts a above b)
        reversed_share = _reversed_share(-1.0, delta)
        boot = float(np.mean([bt.flip(a, b) for bt in boots]))
        boot_pairs = float(np.mean([bt.disagree(a, b) for bt in boots]))
        out.append(
            {
                "upper": models[a],
                "lower": models[b],
                "flip_across_splits": float(np.mean(disagree)),
                "reversed_vs_consensus": reversed_share,
                "flip_bootstrap": boot,
                "flip_bootstrap_pairs": boot_pairs,
            }
        )
    return out


def _disagree(x: float, y: float) -> float:
    """1 when two splits order a pair oppositely, 0 when alike, 0.5 when exactly one ties it."""
    sx, sy = np.sign(x), np.sign(y)
    if sx == sy:
        return 0.0
    return 0.5 if sx == 0 or sy == 0 else 1.0


def _overall(out: dict, ranks: np.ndarray, boots: list[BootstrapRanks]) -> dict:
    per = out["per_model"]
    pairs = out["adjacent_pairs"]
    across_sd = float(np.mean([p["rank_sd"] for p in per]))
    boot_sd = float(np.mean([p["bootstrap_rank_sd"] for p in per]))
    return {
        "splits": int(ranks.shape[0]),
        "models": int(ranks.shape[1]),
        "mean_rank_sd_across_splits": across_sd,
        "mean_rank_sd_bootstrap": boot_sd,
        "sd_ratio": across_sd / boot_sd if boot_sd > 0 else None,
        "coverage": float(np.mean([p["coverage"] for p in per])),
        "models_within_bootstrap_union": int(sum(p["within_union"] for p in per)),
        "mean_flip_across_splits": float(np.mean([p["flip_across_splits"] for p in pairs]))
        if pairs
        else None,
        "mean_flip_bootstrap": float(np.mean([p["flip_bootstrap"] for p in pairs])) if pairs else None,
        "mean_flip_bootstrap_pairs": float(np.mean([p["flip_bootstrap_pairs"] for p in pairs]))
        if pairs
        else None,
        "adjacent_pairs_never_flipped": int(sum(p["flip_across_splits"] == 0 for p in pairs)),
    }
