"""Planning: every trial of a grid, its deterministic id, and an order that stays unbiased when cut.

The trial id is the agent's ``trial_id_for`` over everything that decides a trial's output
(bank hash, task, model slug and route, epoch, seed, agent version = prompts + limits,
tool-schema hash). Generation knobs (temperature, ``max_tokens``, extras) are folded into the
route argument when set, so changing them makes new trials; transport params are not. The planner is the authority: the
worker stamps the planned id on the record it stores.
"""

from __future__ import annotations

import gc
import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from apiflow.agent import TrialLimits
from apiflow.agent.ids import agent_version
from apiflow.analysis.outcomes import kind_of
from apiflow.bank import Bank, Task
from apiflow.errors import UsageError
from apiflow.models.retry import QUOTA_KIND
from apiflow.results.store import ResultStore
from apiflow.tools import tool_schema_hash
from cluster.spec import GridModel, GridSpec, Sample, canonical_hash

CYCLE_SEED_STRIDE = 1_000_003
"""Seed offset of each extra cycle through the tasks when ``tasks.count`` exceeds the bank."""


@dataclass(frozen=True, slots=True)
class PlannedTrial:
    """One trial to run: small, picklable, enough for a worker to rebuild everything else."""

    trial_id: str
    model_index: int
    task_id: str
    world: str
    epoch: int
    seed: int


def trial_limits(spec: GridSpec) -> TrialLimits:
    """The agent's limits object for this grid."""
    return TrialLimits(**spec.limits.model_dump())


def model_route(model: GridModel) -> str:
    """The ``model_api`` argument of the trial id: the route, plus a digest of non-default generation knobs."""
    knobs = {"extra": model.extra, "temperature": model.temperature, "max_tokens": model.max_tokens}
    if knobs == {"extra": {}, "temperature": 1.0, "max_tokens": None}:
        return model.model
    return f"{model.model}#{canonical_hash(knobs)[:16]}"


def select_tasks(spec: GridSpec, bank: Bank) -> list[Task]:
    """The bank tasks the grid's filter keeps, in bank order.

    Raises:
        UsageError: the filter keeps no task (a grid of nothing is a mistake, not a finished run), or
            names a task or an axis the bank does not have.
    """
    wanted = spec.tasks
    if wanted.ids is not None:
        chosen = [bank.task(task_id) for task_id in wanted.ids]
    else:
        chosen = list(bank.tasks.values())
    if wanted.axes is not None:
        unknown = set(wanted.axes) - {t.axis for t in bank.tasks.values()}
        if unknown:
            known = sorted({str(t.axis) for t in bank.tasks.values()})
            raise UsageError(f"bank {bank.name} has no axis {sorted(unknown)}; its axes: {', '.join(known)}")
    left_out = set(wanted.exclude or ())
    kept = [
        t
        for t in chosen
        if (wanted.worlds is None or t.world in wanted.worlds)
        and (wanted.kind == "all" or t.kind == wanted.kind)
        and (wanted.min_length is None or t.length >= wanted.min_length)
        and (wanted.max_length is None or t.length <= wanted.max_length)
        and (wanted.axes is None or t.axis in wanted.axes)
        and (wanted.difficulties is None or t.difficulty in wanted.difficulties)
        and t.id not in left_out
    ]
    if wanted.sample is not None:
        kept = _sampled(kept, wanted.sample, spec.base_seed)
    if not kept:
        used = wanted.model_dump(exclude_defaults=True, exclude={"count"})
        raise UsageError(f"the grid's task filter {used or {}} keeps no task of bank {bank.name}")
    return kept


def _sampled(tasks: list[Task], sample: Sample, grid_seed: int) -> list[Task]:
    """A seeded draw from each stratum (its own random stream: a stratum's draw does not depend on the
    others), kept in bank order."""
    strata: dict[str, list[Task]] = {}
    for task in tasks:
        key = {"world-axis": f"{task.world}/{task.axis}", "world": task.world, "axis": str(task.axis),
               "none": ""}[sample.per]  # fmt: skip
        strata.setdefault(key, []).append(task)
    seed = grid_seed if sample.seed is None else sample.seed
    keep: set[str] = set()
    for key, members in sorted(strata.items()):
        size = sample.count if sample.count is not None else max(1, round(len(members) * (sample.fraction or 0)))
        keep.update(t.id for t in random.Random(f"{seed}:{key}").sample(members, min(size, len(members))))
    return [t for t in tasks if t.id in keep]


def task_slots(spec: GridSpec, bank: Bank) -> list[tuple[Task, int]]:
    """``(task, seed)`` per task slot: each selected task once, or cycled to ``tasks.count`` slots."""
    tasks = select_tasks(spec, bank)
    count = spec.tasks.count or len(tasks)
    seed = spec.base_seed
    return [(tasks[i % len(tasks)], seed + (i // len(tasks)) * CYCLE_SEED_STRIDE) for i in range(count)]


def plan_grid(spec: GridSpec, bank: Bank) -> list[PlannedTrial]:
    """Every trial of the grid, in run order (see ``run_order``)."""
    # Hundreds of thousands of small acyclic objects: the cyclic GC would walk them again and
    # again while they are built and find nothing (~40 % of planning at 443,650 trials).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _plan(spec, bank)
    finally:
        if enabled:
            gc.enable()


def _plan(spec: GridSpec, bank: Bank) -> list[PlannedTrial]:
    version = agent_version(trial_limits(spec))
    schema_hash = tool_schema_hash()
    ids = TrialIds(bank.hash, version, schema_hash)
    models = [(ids.encoded(m.slug), ids.encoded(model_route(m))) for m in spec.models]
    slots = [(task, seed, ids.encoded(task.id), str(seed)) for task, seed in task_slots(spec, bank)]
    trials = [
        PlannedTrial(
            trial_id=ids.trial_id(task_json, slug_json, route_json, epoch, seed_json),
            model_index=mi,
            task_id=task.id,
            world=task.world,
            epoch=epoch,
            seed=seed,
        )
        for epoch in range(1, spec.epochs + 1)
        for task, seed, task_json, seed_json in slots
        for mi, (slug_json, route_json) in enumerate(models)
    ]
    return run_order(trials, spec.base_seed)


class TrialIds:
    """``trial_id_for`` for many trials of one grid, byte for byte, without a ``json.dumps`` per trial.

    ``trial_id_for`` hashes the compact JSON array of its arguments (all strings and ints). Each
    string's JSON is computed once per grid here and the array is joined by hand; that is 90 % of
    planning's time at 443,650 trials (issue 11 §5). A test compares it with ``trial_id_for``.
    """

    def __init__(self, bank_hash: str, agent: str, tool_schema_hash: str) -> None:
        self.head = f"[{self.encoded('trial')},{self.encoded(bank_hash)},"
        self.tail = f",{self.encoded(agent)},{self.encoded(tool_schema_hash)}]"

    @staticmethod
    def encoded(text: str) -> str:
        """A string as ``json.dumps`` writes it."""
        return json.dumps(text)

    def trial_id(self, task_json: str, slug_json: str, route_json: str, epoch: int, seed_json: str) -> str:
        """The id of one trial from its pre-encoded parts (``encoded(...)``; the seed as ``str(seed)``)."""
        text = f"{self.head}{task_json},{slug_json},{route_json},{epoch},{seed_json}{self.tail}"
        return hashlib.sha256(text.encode()).hexdigest()


def run_order(trials: Iterable[PlannedTrial], seed: int) -> list[PlannedTrial]:
    """Epoch-major; within an epoch, worlds interleaved and, inside each world, models round-robin.

    Each (epoch, world, model) queue is shuffled with a seed of its own; models alternate
    within a world and worlds are spread evenly over the epoch. Any prefix of this order covers
    every model and world about evenly, so a sweep cut short (budget, interruption) is a fair
    sample rather than "the first worlds of the first model".
    """
    groups: dict[tuple[int, str], dict[int, list[PlannedTrial]]] = {}
    for trial in trials:
        groups.setdefault((trial.epoch, trial.world), {}).setdefault(trial.model_index, []).append(trial)
    ordered: list[PlannedTrial] = []
    for epoch in sorted({e for e, _ in groups}):
        world_queues = []
        for (e, world), by_model in sorted(groups.items()):
            if e != epoch:
                continue
            queues = []
            for model_index in sorted(by_model):
                queue = sorted(by_model[model_index], key=lambda t: t.trial_id)
                random.Random(f"{seed}:{epoch}:{world}:{model_index}").shuffle(queue)
                queues.append(queue)
            random.Random(f"{seed}:{epoch}:{world}").shuffle(queues)
            world_queues.append(_spread(queues))
        ordered.extend(_spread(world_queues))
    return ordered


def _spread(queues: list[list[PlannedTrial]]) -> list[PlannedTrial]:
    """Merge queues so each is spread evenly (a queue half as long appears every other slot)."""
    keyed = [((i + 0.5) / len(q), n, t) for n, q in enumerate(queues) for i, t in enumerate(q)]
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [t for _, _, t in keyed]


def remaining(plan: list[PlannedTrial], done: set[str]) -> list[PlannedTrial]:
    """The planned trials without a stored row, order kept."""
    return [t for t in plan if t.trial_id not in done]


# ---- resume: what a rerun runs ------------------------------------------------------------------
# A harness/provider outcome is unscored and, by default, retried on resume. Without a bound a trial
# whose world or provider fails every time would be planned (and paid for) forever, and a grid whose
# last trials always fail would never end: after ``GridSpec.max_unscored_attempts`` such attempts
# the trial is final (reported unscored), until ``grid run --retry-unscored`` (docs/design/045, §6).


def failed_attempts(store: ResultStore, done: AbstractSet[str]) -> list[dict[str, Any]]:
    """Each unscored attempt on record of a trial still without a row (``trial_id``, ``model``, ``harness_error``)."""
    return store.failed_attempts(["trial_id", "model", "harness_error"], skip=done).to_pylist()


def attempts_toward_bound(attempts: Iterable[dict[str, Any]]) -> Counter[str]:
    """Per trial, its attempts that count toward the bound: every one but an account out of quota
    (the trial never ran; a parked provider's "add credit, then rerun" must hold however often)."""
    return Counter(a["trial_id"] for a in attempts if kind_of(a["harness_error"]) != QUOTA_KIND)


def final_ids(counts: Counter[str], bound: int) -> set[str]:
    """The trials with ``bound`` or more unscored attempts: unscored, final."""
    return {trial_id for trial_id, n in counts.items() if n >= bound}


@dataclass(frozen=True)
class Resume:
    """A plan held against the store: what to run, what is stored, what is final."""

    todo: list[PlannedTrial]
    stored: int
    """Planned trials with a stored row."""
    final: int
    """Planned trials left out as unscored, final (0 with ``retry_unscored``)."""
    attempts: dict[str, int] = field(default_factory=dict)
    """Unscored attempts on record (toward the bound) of each planned trial without a row."""


def resume_plan(plan: list[PlannedTrial], store: ResultStore, bound: int, retry_unscored: bool = False) -> Resume:
    """The planned trials a run of this grid runs: neither stored nor, unless ``retry_unscored``,
    unscored ``bound`` times already. Reads the store's rows (first: a store out of reach fails
    here, before anything starts), then its failure rows."""
    done = store.done_ids()
    planned = {t.trial_id for t in plan}
    counts = attempts_toward_bound(failed_attempts(store, done))
    attempts = {t: n for t, n in counts.items() if t in planned}
    final = set() if retry_unscored else final_ids(counts, bound)
    todo = remaining(plan, done | final)
    stored = len(planned & done)
    return Resume(todo=todo, stored=stored, final=len(plan) - len(todo) - stored, attempts=attempts)
