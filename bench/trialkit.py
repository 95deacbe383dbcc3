"""What ``bench_trial.py``'s two mixes (and ``bench_vs_inspect.py``) share: the bank, the rounds, the
keyword arguments of a bench trial, one timed batch. Not a bench of its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from apiflow.bank import DEFAULT_BANK, Bank
from apiflow.bank.task import Task

V1_BANK = DEFAULT_BANK.parent / "v1"
ROUNDS = 7


def trial_kwargs(bank: Bank, task: Task, epoch: int) -> dict[str, Any]:
    """``run_trial``'s keyword arguments for a bench trial (seed 0, the oracle's slug)."""
    return dict(
        seed=0,
        epoch=epoch,
        bank_name=bank.name,
        bank_hash=bank.hash,
        run_id="bench",
        model_slug="apiflow-oracle",
    )


def time_once(n: int, batch: Callable[[int], None]) -> tuple[float, float]:
    """(cpu_s, wall_s) of one ``batch(n)``."""
    c0, w0 = time.process_time(), time.perf_counter()
    batch(n)
    return time.process_time() - c0, time.perf_counter() - w0
