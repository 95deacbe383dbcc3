"""Independent-error null model for chains (RUNNER-NOTES §D.5).

If a chain's steps failed independently at the model's own solo rates, a chain trial of model m
in world w with length K would pass with probability prod_{k=1..K} p[m, w, k], where p[m, w, k]
is m's pass rate on solo step k of world w (all its counted trials). A slice's prediction is the
mean of that over the slice's chain trials; it is compared with the slice's observed pass rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apiflow.analysis.trials import Trials


@dataclass(frozen=True)
class NullModel:
    """Predicted pass probability of every trial (NaN for solo trials and unpredictable chains)."""

    predicted: np.ndarray

    def predictable(self, mask: np.ndarray) -> np.ndarray:
        """The chain trials of ``mask`` that have a prediction (every solo step rate is known)."""
        return mask & ~np.isnan(self.predicted)


def solo_step_rates(trials: Trials) -> np.ndarray:
    """p[m, w, k]: pass rate of model m on solo step k of world w; NaN where never counted.

    Shape (M, W, S + 1) with S the largest solo step; index 0 is unused (NaN).
    """
    solo = trials.solo & trials.counted
    steps = int(trials.length[trials.solo].max(initial=0))
    shape = (len(trials.models), len(trials.worlds), steps + 1)
    flat = np.ravel_multi_index((trials.model[solo], trials.world[solo], trials.length[solo]), shape)
    size = shape[0] * shape[1] * shape[2]
    passes = np.bincount(flat, weights=trials.passed[solo], minlength=size).reshape(shape)
    counted = np.bincount(flat, minlength=size).reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted > 0, passes / np.where(counted > 0, counted, 1), np.nan)


def null_model(trials: Trials) -> NullModel:
    """Predict every chain trial's pass probability from its model's solo step rates in its world."""
    rates = solo_step_rates(trials)
    # chain_product[m, w, K] = prod_{k<=K} p[m, w, k] (NaN once any step is unknown).
    ones = np.ones(rates.shape[:2] + (1,))
    chain_product = np.concatenate([ones, np.cumprod(rates[:, :, 1:], axis=2)], axis=2)
    predicted = np.full(trials.n, np.nan)
    steps = rates.shape[2] - 1
    chain = trials.chain & (trials.length <= steps)
    predicted[chain] = chain_product[trials.model[chain], trials.world[chain], trials.length[chain]]
    return NullModel(predicted=predicted)


def world_sums(trials: Trials, model: NullModel, mask: np.ndarray) -> dict[str, np.ndarray]:
    """Per-world observed passes, predicted passes and trials of the predictable counted trials in ``mask``.

    These are the bootstrap's numerators and denominator: observed and predicted rates, their
    ratio and gap are recomputed on the same resampled worlds.
    """
    use = model.predictable(mask & trials.counted)
    n_worlds = len(trials.worlds)
    return {
        "observed": np.bincount(trials.world[use], weights=trials.passed[use], minlength=n_worlds),
        "predicted": np.bincount(trials.world[use], weights=model.predicted[use], minlength=n_worlds),
        "trials": np.bincount(trials.world[use], minlength=n_worlds).astype(float),
    }
