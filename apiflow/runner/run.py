"""``Run``: a run's shared parts (bank, seed, limits, replay...) and its batch loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from apiflow.agent.ids import trial_seed
from apiflow.agent.loop import TrialLimits
from apiflow.agent.replay import Replay
from apiflow.agent.trial import TrialSpec, run_trial
from apiflow.bank import Bank
from apiflow.bank.task import Task
from apiflow.models import GenerateConfig, ModelClient, make_model, model_slug
from apiflow.models.agent_thread import close_loop
from apiflow.results.canary_key import CanaryKey
from apiflow.results.prices import Prices
from apiflow.results.record import TrialRecord


async def play_trial(spec: TrialSpec, model: ModelClient, replay: Replay | None = None) -> TrialRecord:
    """Play, grade and record one trial (the only call of ``run_trial``)."""
    return await run_trial(spec, model, replay=replay)


def play_trial_sync(spec: TrialSpec, model: ModelClient, replay: Replay | None = None) -> TrialRecord:
    """``play_trial`` for callers without an event loop (scripts, the gates, tests, benchmarks).

    A private event loop rather than ``asyncio.run``: on Python 3.11 ``asyncio.run`` swaps the SIGINT
    handler, and ``signal`` then formats the old handler's repr (the whole task and its coroutine
    stack) on every call.
    """
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(play_trial(spec, model, replay))
    finally:
        close_loop(loop)


class TrialPlan(NamedTuple):
    """One trial of a run: which model, on which task, in which epoch."""

    model: str
    task: Task
    epoch: int


@dataclass(frozen=True, eq=False)
class Run:
    """What the trials of one run share.

    Attributes:
        bank: The bank the tasks come from (name and hash are recorded on every trial).
        run_id: The run id recorded on every trial.
        seed: The run's base seed: world, workspace and canary seeds and the model's derive from it,
            the task and the epoch.
        limits: Trial limits (default 500 messages, 1,800 s).
        config: Generation parameters (default temperature 1.0).
        params: Provider or plug-in parameters for every model.
        replay: World answers and grades shared by the run's trials (``apiflow.agent.replay``:
            ``replay_for(models)``), or None.
        canary_key: The results folder's secret canary key, or None for forms derived from the seed
            alone (``TrialSpec.canary_key``).
        prices: The prices of the model the run's trials play (one model, when given): each record's
            ``cost_usd`` is priced call by call (``TrialSpec.prices``); None leaves it unset.
    """

    bank: Bank
    run_id: str
    seed: int = 0
    limits: TrialLimits | None = None
    config: GenerateConfig | None = None
    params: dict[str, Any] | None = None
    replay: Replay | None = None
    canary_key: CanaryKey | None = None
    prices: Prices | None = None

    def spec(self, task: Task, epoch: int, slug: str, trial_id: str | None = None) -> TrialSpec:
        """The spec of one trial of this run."""
        return TrialSpec(
            task=task, world=self.bank.world_of(task), seed=self.seed, epoch=epoch, bank_name=self.bank.name,
            bank_hash=self.bank.hash, run_id=self.run_id, model_slug=slug, limits=self.limits,
            config=self.config, trial_id=trial_id, canary_key=self.canary_key, prices=self.prices,
        )  # fmt: skip

    def model(self, name: str, task: Task, epoch: int) -> ModelClient:
        """The model of one trial: seeded by the run's seed, the task and the epoch."""
        return make_model(name, task, trial_seed(self.seed, task.id, epoch), self.params)

    async def play(
        self, trials: Iterable[TrialPlan], build: Callable[[TrialPlan], ModelClient] | None = None
    ) -> AsyncIterator[TrialRecord]:
        """Play ``trials`` one after another, in order; ``build`` makes a trial's model when the
        caller needs another than ``Run.model`` (screen-eval plays a perturbed view of the task)."""
        slugs: dict[str, str] = {}
        for trial in trials:
            model = build(trial) if build is not None else self.model(trial.model, trial.task, trial.epoch)
            slug = slugs.get(trial.model) or slugs.setdefault(trial.model, model_slug(trial.model))
            yield await play_trial(self.spec(trial.task, trial.epoch, slug), model, self.replay)
