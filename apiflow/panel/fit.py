"""Fit per-model calibrated sim parameters to the published table (``apiflow panel fit``).

Three deterministic stages, each matching published statistics with the closed-form model of
``apiflow.models.latent``:

1. per model, the five parameters of ``LatentParams`` against its solo rate, its rate at every
   chain length (the decay shape, with extra weight on the longest), best-of-5, all-5-of-5 and the
   delivery-only and abstained shares of its failures;
2. for the panel, how much of each model's task term is shared by all models, against how often
   two models both never pass the same task;
3. how much of the shared term belongs to whole worlds, against the spread of world mean rates.

The result is a pinned JSON file whose bytes depend only on the input table.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa

from apiflow.analysis.panels import ORIGINAL_19
from apiflow.analysis.trials import select_rows, trials_from_table
from apiflow.errors import UsageError
from apiflow.hashing import content_hash
from apiflow.models.latent import (
    LatentParams,
    ModelStats,
    per_kind,
    predict,
    quadrature_nodes,
    stuck_given_shared,
    unstuck_outcomes,
)
from apiflow.panel.search import nelder_mead
from apiflow.panel.stats import (
    TaskComposition,
    composition,
    model_stats,
    shared_failures,
    world_spread,
)

FIT_VERSION = 1
DIGITS = 6  # parameters are rounded so the file's bytes do not depend on the last float ulp

# Loss weights: the headline statistics weigh most; the decay shape is spread over the lengths.
W_SOLO, W_LONGEST, W_DECAY, W_BEST, W_ALL, W_SHARE = 10.0, 3.0, 10.0, 10.0, 10.0, 2.0
RIDGE = 1e-5  # a whisker of pull towards the start: keeps weakly identified parameters determinate

_START = np.array([-3.0, -3.5, -2.0, -1.0, -5.0, -4.0, math.log(0.8), -2.5])


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _params(theta: np.ndarray) -> LatentParams:
    solo_blocker, blocker, lucky, stuck_card, slip, card, log_focus, abstain = (float(v) for v in theta)
    return LatentParams(
        solo_blocker=_sigmoid(solo_blocker),
        blocker=_sigmoid(blocker),
        lucky=_sigmoid(lucky),
        stuck_card=_sigmoid(stuck_card),
        slip=_sigmoid(slip),
        card=_sigmoid(card),
        focus_sd=math.exp(log_focus),
        abstain=_sigmoid(abstain),
    )


def _loss(pred: ModelStats, target: ModelStats) -> float:
    lengths = sorted(target.by_length)
    decay = sum((pred.by_length[k] - target.by_length[k]) ** 2 for k in lengths) / max(len(lengths), 1)
    return (
        W_SOLO * (pred.solo - target.solo) ** 2
        + W_LONGEST * (pred.by_length[lengths[-1]] - target.longest) ** 2
        + W_DECAY * decay
        + W_BEST * (pred.best_of - target.best_of) ** 2
        + W_ALL * (pred.all_of - target.all_of) ** 2
        + W_SHARE * (pred.delivery_share - target.delivery_share) ** 2
        + W_SHARE * (pred.abstained_share - target.abstained_share) ** 2
    )


ITERATIONS = 1500
"""Nelder-Mead budget of stage 1 (its restart gets 8/15 of it); the pinned file uses this."""


def fit_model(target: ModelStats, comp: TaskComposition, iterations: int = ITERATIONS) -> LatentParams:
    """Stage 1: one model's parameters (``iterations`` below the default: a cut-down, still
    deterministic fit, for tests)."""

    def loss(theta: np.ndarray) -> float:
        if np.any(np.abs(theta) > 15):  # keep the search in a sane box
            return 1e6
        pred = predict(_params(theta), comp.subtasks, comp.chain, comp.epochs)
        return _loss(pred, target) + RIDGE * float(((theta - _START) ** 2).sum())

    best = nelder_mead(loss, _START, step=1.0, iterations=iterations)
    # restart: escapes a collapsed simplex
    best = nelder_mead(loss, best, step=0.3, iterations=iterations * 8 // 15)
    return _params(best)


def _kinds(comp: TaskComposition) -> tuple[np.ndarray, np.ndarray]:
    ks, counts = np.unique(comp.subtasks, return_counts=True)
    return ks, counts / counts.sum()


def _never_given_shared(
    p: LatentParams, shared: np.ndarray, share: float, comp: TaskComposition
) -> np.ndarray:
    """(K, ...shared): P(no epoch passes | shared liability) per subtask count."""
    ks, _ = _kinds(comp)
    per = per_kind(p, ks.astype(float), comp.epochs)
    out = []
    for i, k in enumerate(ks):
        stuck = stuck_given_shared(p, int(k), shared, share)
        out.append(stuck * per["never_stuck"][i] + (1 - stuck) * per["never_free"][i])
    return np.stack(out)


def _pair_never(params: list[LatentParams], share: float, comp: TaskComposition) -> float:
    """Predicted mean over model pairs of the share of tasks both never pass (stage 2)."""
    x, w = quadrature_nodes()
    _, weight = _kinds(comp)
    never = [_never_given_shared(p, math.sqrt(share) * x, share, comp) for p in params]  # (K, N) each
    pairs = [
        float(weight @ ((never[i] * never[j]) @ w))
        for i in range(len(params))
        for j in range(i + 1, len(params))
    ]
    return float(np.mean(pairs))


def fit_shared(params: list[LatentParams], observed: float, comp: TaskComposition) -> float:
    """Stage 2: the share of the stuck liability's variance common to every model (a grid, the
    point nearest the observed pair statistic)."""
    grid = [f / 100 for f in range(0, 100)]
    return min(grid, key=lambda share: abs(_pair_never(params, share, comp) - observed))


def _world_sd(params: list[LatentParams], share: float, world_share: float, comp: TaskComposition) -> float:
    """Predicted SD across worlds of the panel-mean per-task rate (stage 3)."""
    x, w = quadrature_nodes()
    ks, weight = _kinds(comp)
    shared = math.sqrt(world_share) * x[:, None] + math.sqrt(max(share - world_share, 0.0)) * x[None, :]
    rate = np.zeros((len(ks), len(x), len(x)))  # (K, world node, task node): panel-mean rate
    for p in params:
        u_pass = unstuck_outcomes(p, ks.astype(float))[0]
        for i, k in enumerate(ks):
            stuck = stuck_given_shared(p, int(k), shared, share)
            rate[i] += stuck * p.lucky + (1 - stuck) * u_pass[i]
    rate /= len(params)
    by_world = rate @ w  # (K, world node)
    within = (rate**2) @ w - by_world**2
    tasks_per_world = len(comp.subtasks) / max(len(np.unique(comp.world)), 1)
    world_mean = weight @ by_world
    between = float(world_mean**2 @ w - (world_mean @ w) ** 2)
    task_mean = by_world @ w
    spread_k = float(weight @ (task_mean - weight @ task_mean) ** 2)
    return math.sqrt(between + (float(weight @ (within @ w)) + spread_k) / tasks_per_world)


def fit_world(params: list[LatentParams], share: float, observed: float, comp: TaskComposition) -> float:
    """Stage 3: the share of the liability's variance common to a whole world (within ``share``)."""
    grid = [share * f / 50 for f in range(0, 51)]
    return min(grid, key=lambda ws: abs(_world_sd(params, share, ws, comp) - observed))


def _round(value: float) -> float:
    return round(float(value), DIGITS)


def _stats_dict(stats: ModelStats) -> dict:
    return {
        "solo": _round(stats.solo),
        "longest": _round(stats.by_length[max(stats.by_length)]),
        "best_of": _round(stats.best_of),
        "all_of": _round(stats.all_of),
        "delivery_share": _round(stats.delivery_share),
        "abstained_share": _round(stats.abstained_share),
        "by_length": {str(k): _round(v) for k, v in sorted(stats.by_length.items())},
    }


def fit_panel(
    table: pa.Table,
    source_sha256: str,
    panel: str = ORIGINAL_19,
    models: Sequence[str] | None = None,
    iterations: int = ITERATIONS,
) -> dict:
    """The whole fit as the JSON-ready document ``configs/panels/calibrated-<panel>.json`` holds.

    ``models`` restricts the fit to some of the panel's models (at least two: the shared stage
    pairs them) and ``iterations`` cuts stage 1's budget; a cut-down document says so in its
    ``cut_down`` entry. The pinned file is the full fit. The same input gives the same bytes.

    Raises:
        UsageError: the panel or a model is not in the table, or fewer than two models.
    """
    if models is not None and len(set(models)) < 2:
        raise UsageError("the fit needs at least two models (the shared stage pairs them)")
    if iterations < 1:
        raise UsageError("--iterations must be at least 1")
    trials = trials_from_table(select_rows(table, panel=panel, models=models))
    comp = composition(trials)
    targets = model_stats(trials)
    names = list(targets)
    params = [fit_model(targets[n], comp, iterations) for n in names]
    share = fit_shared(params, shared_failures(trials), comp)
    world_share = fit_world(params, share, world_spread(trials), comp)
    fitted = {}
    for name, p in zip(names, params, strict=True):
        fitted[name] = {
            **{key: _round(value) for key, value in asdict(p).items()},
            "published": _stats_dict(targets[name]),
            "predicted": _stats_dict(predict(p, comp.subtasks, comp.chain, comp.epochs)),
        }
    body = {
        "fit_version": FIT_VERSION,
        "panel": panel,
        "source": {"sha256": source_sha256, "trials": trials.n, "tasks": len(trials.tasks)},
        "shared": {
            "world_share": _round(world_share),
            "task_share": _round(share - world_share),
            "pair_never_published": _round(shared_failures(trials)),
            "pair_never_predicted": _round(_pair_never(params, share, comp)),
            "world_spread_published": _round(world_spread(trials)),
            "world_spread_predicted": _round(_world_sd(params, share, world_share, comp)),
        },
        "models": fitted,
    }
    if models is not None or iterations != ITERATIONS:
        body["cut_down"] = {"models": sorted(names), "iterations": iterations}
    return {**body, "sha256": content_hash(body)}


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def dump(document: dict) -> str:
    """The file's exact text (what ``apiflow panel fit`` writes and its test compares)."""
    return json.dumps(document, indent=1, sort_keys=True) + "\n"
