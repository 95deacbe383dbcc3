"""``bench_trial.py --mix calibrated``: the grid's trial, the 19 calibrated sims on a fixed sample of
``bank/v1`` (issue 11 §2). Not a bench of its own; ``bench_trial.py``'s docstring says what it reports."""

from __future__ import annotations

import asyncio
import cProfile
import os
import pstats
import statistics
import sys
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple
from unittest import mock

from trialkit import ROUNDS, time_once, trial_kwargs

from apiflow.agent import TrialSpec, trial_seed
from apiflow.agent import trial as trial_module
from apiflow.agent.replay import Replay
from apiflow.bank import Bank
from apiflow.bank.task import Task
from apiflow.models import make_model
from apiflow.models.calibrated import calibrated_panel
from apiflow.models.registry import model_slug
from apiflow.runner import play_trial

CALIBRATED_STRIDE = 29  # every 29th bank/v1 task by id: 17 tasks (coprime with the 19 sims), golden
# paths of 15.4 calls on average against the bank's 15.3


class CalibratedTrial(NamedTuple):
    """One trial of the calibrated sample: what a grid actor is handed."""

    task: Task
    model: str
    epoch: int


def calibrated_sample(bank: Bank, n: int) -> list[CalibratedTrial]:
    """Trial i = (task i mod T, sim i mod 19, epoch 1 + i // (T * 19) mod 5), T the sampled tasks.

    T (17 on bank/v1) and 19 are coprime, so the first T * 19 trials are every pair once.
    """
    tasks = sorted(bank.tasks.values(), key=lambda t: t.id)[::CALIBRATED_STRIDE]
    sims = calibrated_panel()
    whole = len(tasks) * len(sims)
    return [
        CalibratedTrial(tasks[i % len(tasks)], sims[i % len(sims)], 1 + (i // whole) % 5) for i in range(n)
    ]


def _grid_trial(bank: Bank, trial: CalibratedTrial, replay: Replay | None) -> Awaitable[Any]:
    task, name, epoch = trial
    model = make_model(name, task, trial_seed(0, task.id, epoch))
    kwargs = trial_kwargs(bank, task, epoch) | {"model_slug": model_slug(name)}
    return play_trial(TrialSpec(task=task, world=bank.world_of(task), **kwargs), model, replay=replay)


def calibrated_variants(bank: Bank, sample: list[CalibratedTrial]) -> dict[str, Callable[[int], None]]:
    """``model``, ``ungraded``, ``trial``, ``stored``: each plays ``sample[:n]`` (cycled)."""

    def model_batch(n: int) -> None:
        for i in range(n):
            task, name, epoch = sample[i % len(sample)]
            make_model(name, task, trial_seed(0, task.id, epoch))

    shared = Replay()  # one offline run's, as a grid actor holds one

    def trial_batch(n: int, store: bool = False, cold: bool = False) -> None:
        async def go() -> None:
            for i in range(n):
                record = await _grid_trial(bank, sample[i % len(sample)], None if cold else shared)
                if store:
                    record.to_json_bytes()

        asyncio.run(go())

    def ungraded_batch(n: int) -> None:
        with mock.patch.object(trial_module._Trial, "grade", lambda self: None):
            trial_batch(n)

    return {
        "model": model_batch,
        "ungraded": ungraded_batch,
        "trial": trial_batch,
        "stored": lambda n: trial_batch(n, store=True),
        "cold": lambda n: trial_batch(n, store=True, cold=True),
    }


def calibrated_main(bank: Bank, n: int, calls: bool, profile_it: bool) -> int:
    """``--mix calibrated``: timing table, or ``--calls``, or ``--profile`` of the graded trial."""
    sample = calibrated_sample(bank, n)

    async def play() -> list[Any]:
        return [await _grid_trial(bank, t, None) for t in sample]

    records = asyncio.run(play())
    tool_calls = statistics.mean(r.apiflow.tool_calls for r in records)
    passed = sum(bool(r.passed) for r in records)
    print(
        f"calibrated mix: {n} trials ({len({t.task.id for t in sample})} bank/v1 tasks x "
        f"{len({t.model for t in sample})} sims), {tool_calls:.2f} tool calls per trial, "
        f"{passed} passed; python {sys.version.split()[0]}; load {os.getloadavg()[0]:.2f}"
    )
    variants = calibrated_variants(bank, sample)
    if profile_it:
        prof = cProfile.Profile()
        prof.runcall(variants["trial"], n)
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return 0
    for batch in variants.values():
        batch(min(n, 40))  # warm caches and imports
    if calls:
        for name, batch in variants.items():
            prof = cProfile.Profile()
            prof.runcall(batch, n)
            per = pstats.Stats(prof).total_calls / n
            print(f"{name:10s} {per:10.1f} function calls per trial {per / tool_calls:8.1f} per tool call")
        return 0
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, batch in variants.items():
            samples[name].append(time_once(n, batch)[0])
    print(
        f"{'variant':10s} {'cpu ms/trial':>13s} {'spread (best-worst round)':>26s} {'cpu us/tool call':>17s}"
    )
    for name, runs in samples.items():
        per = statistics.median(runs) / n
        spread = f"{min(runs) / n * 1e3:.3f}-{max(runs) / n * 1e3:.3f}"
        print(f"{name:10s} {per * 1e3:13.3f} {spread:>26s} {per / tool_calls * 1e6:17.1f}")
    stored = statistics.median(samples["stored"]) / n * 1e3
    print(
        f"grid trial (stored, median round): {stored:.3f} ms CPU; 44,365 trials on 2 cores: "
        f"{stored * 44_365 / 2 / 1e3:.1f} s of trial CPU (target 40 s for the whole grid)"
    )
    cold = statistics.median(samples["cold"]) / n * 1e3
    print(
        f"cold (no replay: a new trial): {cold:.3f} ms CPU; replay saves {1 - stored / cold:.0%}"
    )
    return 0
