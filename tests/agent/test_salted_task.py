"""``salted_task`` rebuilds only the spec fields that name a literal: the same specs as salting
and validating each spec's whole dump (the plain definition), on every task of ``bank/v1``."""

from __future__ import annotations

from typing import Any

import pytest

from apiflow.agent.canaries import _salt_spec, canary_literals, salted_task
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
