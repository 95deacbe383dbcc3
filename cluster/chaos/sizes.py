"""The chaos suite's sizes (``Suite``, from ``bench/chaos.py``'s flags) and the grid each scenario runs
at them (``grid_data``): every scenario's trials are the clean grid's or its first part."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

MODELS = ("openai/apiflow/oracle", "openai/apiflow/sim:strong", "openai/apiflow/sim:weak")

FAULTS_TRIALS = 1000
"""The faults scenario's size when ``--faults-trials`` is not given (capped at ``trials``)."""


@dataclass
class Suite:
    """Sizes and timings (flags). Every scenario's trials are the clean grid's or its first part: the
    clean run is the reference each one is compared with, so nothing may run a trial it did not."""

    trials: int = 5000
    faults_trials: int = 0
    """Trials of the faults scenario, the first this many of the clean grid's; 0: ``min(FAULTS_TRIALS,
    trials)``. More than ``trials`` is refused: those extra trials would have no reference."""
    epochs: int = 1
    driver_kills: int = 3
    budget_kills: int = 2
    s3_pause_s: float = 10.0
    fault_rate: float = 0.10
    hang_s: float = 5.0
    call_timeout_s: float = 4.0
    budget_fraction: float = 0.4
    max_attempts: int = 2
    """Attempts per provider call. Low on purpose: ~1 % of calls exhaust their retries, so trials end as
    provider outcomes (failure rows) and the resume path that retries them is exercised too."""
    actors: int = 4
    trials_per_actor: int = 16
    deadline_s: float = 2400.0
    budget_rerun: bool = True
    """Rerun the budget grid once more after BUDGET REACHED (it may spend only the room left)."""
    seed: int = 9
    inproc: tuple[str, ...] = ()
    """Scenarios (``clean``, ``faults``) run in this process without Ray: the same TrialRunner, the same
    stand-in, the same S3 store, minus the driver start-up (how the small test fits its time)."""
    work: Path | None = None
    """Grid files and driver logs. None: a temp dir the run makes, removed when every check passed."""

    def __post_init__(self) -> None:
        if not self.faults_trials:
            self.faults_trials = min(FAULTS_TRIALS, self.trials)
        wrong = self.problems()
        if wrong:
            raise ValueError("; ".join(wrong))

    def problems(self) -> list[str]:
        """Why these sizes cannot give a verdict (empty when they can)."""
        wrong = []
        if self.trials < 1 or self.epochs < 1:
            wrong.append("trials and epochs must be at least 1")
        if not 1 <= self.faults_trials <= self.trials:
            wrong.append(f"faults_trials {self.faults_trials} must be 1..trials ({self.trials}): "
                         "the clean run is the faults scenario's reference")  # fmt: skip
        last = self.kill_points()[-1]
        if last >= 1.0:
            wrong.append(f"driver_kills {self.driver_kills}: the last injection would come at {last:.0%} of "
                         "the clean run's calls, after the grid ends")  # fmt: skip
        if not 0 < self.budget_fraction < 1:
            wrong.append("budget_fraction must be between 0 and 1 (the cap must stop the grid)")
        return wrong

    def kill_points(self) -> list[float]:
        """When each chaos injection comes, as a share of the clean run's provider calls: the driver
        kills, then the actor kill, the raylet kill and the S3 freeze."""
        kills = [0.08 + 0.12 * k for k in range(self.driver_kills)]
        base = 0.08 + 0.12 * self.driver_kills
        return [*kills, base, base + 0.1, base + 0.2]


def grid_data(
    suite: Suite,
    name: str,
    url: str,
    trials: int,
    options: dict[str, Any],
    prices: Path,
    budget: float | None,
) -> dict[str, Any]:
    """A scenario's grid: ``trials`` provider trials (rounded up to whole tasks per model), its first
    task slots, so a smaller grid's trials are the first of a larger one's (the same trial ids)."""
    per_model = math.ceil(trials / (len(MODELS) * suite.epochs))
    params = {"api_base": url, "api_key": "sk-standin", "timeout": suite.call_timeout_s}
    data = {
        "name": "chaos", "bank": str(ROOT / "bank/sample"), "seed": suite.seed, "epochs": suite.epochs,
        "models": [{"model": m, "params": params, "max_tokens": 1024} for m in MODELS],
        "tasks": {"kind": "solo", "count": per_model},
        "out": f"s3://chaos/{name}", "storage_options": options, "price_table": str(prices),
        "retry": {"max_attempts": suite.max_attempts, "base_s": 0.05, "max_wait_s": 0.5, "max_elapsed_s": 120},
        "concurrency": {"actors": suite.actors, "trials_per_actor": suite.trials_per_actor},
        "budget_usd": budget,
    }  # fmt: skip
    return {k: v for k, v in data.items() if v is not None}
