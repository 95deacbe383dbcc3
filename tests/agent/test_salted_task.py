"""``salted_task`` rebuilds only the spec fields that name a literal: the same specs as salting
and validating each spec's whole dump (the plain definition), on every task of ``bank/v1``; and
``trial_salting`` shares one codec and salted task between trials that would build them alike."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from apiflow.agent import canaries as canaries_module
from apiflow.agent.canaries import _salt_spec, canary_literals, salted_task, trial_salting
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.bank.task import Task
from apiflow.world import WorldSession
from apiflow.world.canaries import CanaryCodec

BANK = load_bank(DEFAULT_BANK.parent / "v1")
TASKS = sorted(BANK.tasks.values(), key=lambda t: t.id)


def _plain(task: Task, codec: CanaryCodec) -> dict[str, list[Any]]:
    return {
        name: [
            type(spec).model_validate(_salt_spec(spec.model_dump(), codec)) for spec in getattr(task, name)
        ]
        for name in ("predicates", "checkpoints", "constraints")
    }


@pytest.mark.parametrize("task", TASKS[::7], ids=lambda t: t.id)
def test_salted_specs_equal_the_validated_salted_dumps(task: Task) -> None:
    spec = WorldSession(BANK.world_of(task), 1, state_overrides=task.world_state).spec_content()
    for seed in (1, 2):
        codec = CanaryCodec(canary_literals(task, spec), seed)
        salted = salted_task(task, codec)
        for name, specs in _plain(task, codec).items():
            got = getattr(salted, name)
            assert [type(s) for s in got] == [type(s) for s in specs]
            assert [s.model_dump() for s in got] == [s.model_dump() for s in specs]
            assert got == specs


def test_the_sample_salts_specs() -> None:
    """The check above is not vacuous: most sampled tasks have specs in per-trial forms."""
    changed = 0
    for task in TASKS[::7]:
        spec = WorldSession(BANK.world_of(task), 1, state_overrides=task.world_state).spec_content()
        salted = salted_task(task, CanaryCodec(canary_literals(task, spec), 1))
        changed += salted.predicates != task.predicates or salted.checkpoints != task.checkpoints
    assert changed >= len(TASKS[::7]) // 2


def test_trial_salting_is_shared_by_alike_trials_and_equals_a_fresh_one() -> None:
    task = TASKS[0]
    spec = WorldSession(BANK.world_of(task), 1, state_overrides=task.world_state).spec_content()
    literals = canary_literals(task, spec)
    codec, salted = trial_salting(task, literals, 5)
    assert trial_salting(task, literals, 5) == (codec, salted)  # the same objects, not recomputed
    fresh = CanaryCodec(literals, 5)
    assert codec.forward == fresh.forward and salted == salted_task(task, fresh)
    other_codec, other = trial_salting(task, literals, 6)
    assert other_codec.forward != codec.forward and other != salted
    bare_codec, bare = trial_salting(task, frozenset(), 5)  # another literal set: another entry
    assert not bare_codec and bare is task


def test_trial_salting_stays_bounded_and_forgets_dead_tasks() -> None:
    task = TASKS[1]
    spec = WorldSession(BANK.world_of(task), 1, state_overrides=task.world_state).spec_content()
    literals = canary_literals(task, spec)
    for seed in range(canaries_module._SALTINGS + 50):
        trial_salting(task, literals, seed)
    assert len(canaries_module._saltings) == canaries_module._SALTINGS
    copy = task.model_copy()
    trial_salting(copy, literals, 1)
    key = (id(copy), literals, 1)
    assert key in canaries_module._saltings
    del copy
    gc.collect()
    assert key not in canaries_module._saltings
