"""The calibrated sims' outcome model in closed form, for fitting (no trials are run).

Two layers of correlated competence, as the paper explains its data:

* **Stuck tasks** (per model and task, the same in every epoch). A solo task is beyond the model with
  probability ``solo_blocker``; each of a chain's K subtasks with probability ``blocker``, so a chain
  is *stuck* with probability ``1 - (1 - blocker)^K``. Stuck-ness is drawn from a normal liability with a part shared by every
  model (world + task: the panel fails the same tasks) and a part of the model's own, so epochs of a
  task agree (best-of-5 close to all-5-of-5) and models agree on what is hard. A stuck trial still
  passes with probability ``lucky``; when it fails, it misreports the card (``stuck_card``), abstains
  (``abstain``) or leaves the state wrong.
* **Focus** (per trial). A trial draws a log-normal focus factor ``f`` (mean 1, SD ``focus_sd`` on the
  log scale) that scales every per-step deviation probability of that trial: each subtask slips with
  ``min(1, slip f)``, the card is misreported with ``min(1, card f)``. A slip is an abstention with
  probability ``abstain``.

Expectations over the focus draw use Gauss-Hermite quadrature (deterministic).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

NODES = 24
_NORMAL = NormalDist()


@dataclass(frozen=True)
class LatentParams:
    """One model's parameters (probabilities, except ``focus_sd``)."""

    solo_blocker: float  # a solo task: beyond the model (stuck)
    blocker: float  # per subtask of a chain: beyond the model (makes the chain stuck)
    lucky: float  # per trial of a stuck task: passes anyway
    stuck_card: float  # per failed stuck trial: the failure is a misreported card (state right)
    slip: float  # per subtask of an unstuck trial, at focus 1: a state slip
    card: float  # per unstuck trial, at focus 1: a misreported card
    focus_sd: float  # SD of log focus
    abstain: float  # share of slips and stuck failures that are abstentions


@dataclass(frozen=True)
class ModelStats:
    """One model's calibration statistics: observed (``stats.model_stats``, from trials) or
    predicted (``predict``, in closed form). One class, so a fit and a check compare like with like."""

    rate: float
    solo: float
    by_length: dict[int, float]
    best_of: float
    all_of: float
    delivery_share: float
    abstained_share: float
    trials: int = 0  # counted trials behind an observation (0 for a prediction)

    @property
    def longest(self) -> float:
        """Pass rate at the longest chain length (the headline length, 20 on v1 and the published bank)."""
        return self.by_length[max(self.by_length)] if self.by_length else float("nan")

    def as_dict(self) -> dict:
        """JSON-ready form (lengths as string keys)."""
        out = asdict(self)
        out["by_length"] = {str(k): v for k, v in self.by_length.items()}
        return out


def quadrature_nodes(n: int = NODES) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights normalised to a standard normal."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / w.sum()


SOLO = 0
"""The subtask count the closed form uses for a solo task (chains have K >= 2)."""


def stuck_probability(p: LatentParams, k: np.ndarray) -> np.ndarray:
    """P(a task is stuck for the model), per subtask count ``k`` (``SOLO`` for a solo task)."""
    return np.where(k == SOLO, p.solo_blocker, 1.0 - (1.0 - p.blocker) ** k)


def stuck_threshold(p: LatentParams, k: int) -> float:
    """The liability above which a task is stuck (standard-normal liability)."""
    free = float(1.0 - stuck_probability(p, np.array(k)))
    return _NORMAL.inv_cdf(min(max(free, 1e-12), 1.0 - 1e-12))


def unstuck_outcomes(p: LatentParams, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per subtask count ``k``: P(pass), P(card-only failure), P(some slip) of an unstuck trial."""
    x, w = quadrature_nodes()
    focus = np.exp(p.focus_sd * x - p.focus_sd**2 / 2)  # mean 1
    slip = np.minimum(1.0, p.slip * focus)
    card = np.minimum(1.0, p.card * focus)
    survive = (1.0 - slip[None, :]) ** np.maximum(k, 1)[:, None]
    passed = (survive * (1.0 - card)) @ w
    card_only = (survive * card) @ w
    return passed, card_only, 1.0 - survive @ w


def per_kind(p: LatentParams, ks: np.ndarray, epochs: int) -> dict[str, np.ndarray]:
    """Per subtask count: one trial's pass and failure-class probabilities, best-of / all-of
    ``epochs``, and P(no epoch passes)."""
    stuck = stuck_probability(p, ks)
    u_pass, u_card, u_slip = unstuck_outcomes(p, ks)
    s_fail = 1.0 - p.lucky
    return {
        "pass": (1 - stuck) * u_pass + stuck * p.lucky,
        "delivery": (1 - stuck) * u_card + stuck * s_fail * p.stuck_card,
        "abstained": (1 - stuck) * u_slip * p.abstain + stuck * s_fail * (1 - p.stuck_card) * p.abstain,
        "best_of": (1 - stuck) * (1 - (1 - u_pass) ** epochs) + stuck * (1 - s_fail**epochs),
        "all_of": (1 - stuck) * u_pass**epochs + stuck * p.lucky**epochs,
        "never_free": (1 - u_pass) ** epochs,
        "never_stuck": np.full(len(ks), s_fail**epochs),
    }


def predict(p: LatentParams, lengths: np.ndarray, chain: np.ndarray, epochs: int = 5) -> ModelStats:
    """Statistics of one model over a task composition (per task: subtask count, ``SOLO`` for a solo).

    Rates are task-averaged, which equals the trial-pooled rate when every task has the same
    number of epochs (the published design, and ours).
    """
    ks, inverse = np.unique(lengths, return_inverse=True)
    per = {
        name: values[inverse.reshape(-1)] for name, values in per_kind(p, ks.astype(float), epochs).items()
    }
    fail = 1.0 - per["pass"].mean()
    by_length = {int(k): float(per["pass"][chain & (lengths == k)].mean()) for k in np.unique(lengths[chain])}
    return ModelStats(
        rate=float(per["pass"].mean()),
        solo=float(per["pass"][~chain].mean()) if (~chain).any() else float("nan"),
        by_length=by_length,
        best_of=float(per["best_of"].mean()),
        all_of=float(per["all_of"].mean()),
        delivery_share=float(per["delivery"].mean() / fail) if fail > 0 else 0.0,
        abstained_share=float(per["abstained"].mean() / fail) if fail > 0 else 0.0,
    )


_erf = np.frompyfunc(math.erf, 1, 1)


def normal_cdf(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF, elementwise (numpy has no erf; scipy is not a dependency)."""
    return 0.5 * (1.0 + np.asarray(_erf(np.asarray(x, float) / math.sqrt(2.0)), dtype=float))


def stuck_given_shared(p: LatentParams, k: int, shared: np.ndarray, shared_var: float) -> np.ndarray:
    """P(stuck | the shared part of the liability), the model's own part integrated out."""
    own = math.sqrt(max(1.0 - shared_var, 1e-12))
    return 1.0 - normal_cdf((stuck_threshold(p, k) - shared) / own)
