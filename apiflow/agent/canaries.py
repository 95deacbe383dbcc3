"""Which bank values a trial salts, and the task's grading spec in that trial's per-trial forms.

The codec (``apiflow.world.canaries``) translates values; this module decides *which* values:
the literals an agent can only learn from the API (card values, stored values, and the ids
and tokens the golden solution sends), never one the task itself gives (prompt, seeded
variables, the spec document), since the agent must be able to use those as written.
"""

from __future__ import annotations

import json
import re
import weakref
from collections import OrderedDict
from typing import Any

from apiflow.bank.task import Task
from apiflow.grading.spec import WorkspaceValueSpec
from apiflow.world.canaries import CANARY_SHAPE, CanaryCodec, strings_in
from apiflow.world.memo import IdentityMemo

# Derived once per task object (banks hand the same objects to every trial).
_literals: IdentityMemo[Task, frozenset[str]] = IdentityMemo()
_templates: IdentityMemo[Task, dict[str, list[tuple[Any, dict[str, Any]]]]] = IdentityMemo()


def canary_literals(task: Task, spec_content: Any) -> frozenset[str]:
    """The literals a trial of ``task`` salts (see module docstring); computed once per task."""
    found: frozenset[str] = _literals.get(task, lambda t: _find_literals(t, spec_content))
    return found


def _find_literals(task: Task, spec_content: Any) -> frozenset[str]:
    found: set[str] = set()
    sources: list[Any] = [
        task.expected_card,
        [p.value for p in task.predicates if isinstance(p, WorkspaceValueSpec)],
    ]
    sources += [call.arguments for step in task.golden for call in step.calls]
    for text in strings_in(sources):
        found.update(m.group(0) for m in CANARY_SHAPE.finditer(text))
    given = "\n".join([task.prompt, json.dumps([s.value for s in task.seed]), json.dumps(spec_content)])
    return frozenset(v for v in found if v not in given)


_GRADED_VALUES = frozenset({"expected", "value", "body_contains"})
"""Spec fields whose values the grader compares with what the agent sent or reported (the
explanations and prompt quotes are prose for readers and stay as written)."""


def _salt_spec(value: Any, codec: CanaryCodec, key: str = "") -> Any:
    if isinstance(value, str):
        if "pattern" in key:
            return codec.salt_pattern(value)
        return codec.salt_text(value) if key in _GRADED_VALUES else value
    if isinstance(value, dict):
        return {k: _salt_spec(v, codec, k if key not in _GRADED_VALUES else key) for k, v in value.items()}
    if isinstance(value, list):
        return [_salt_spec(v, codec, key) for v in value]
    return value


_SPEC_LISTS = ("predicates", "checkpoints", "constraints")


def _template(task: Task, literals: frozenset[str]) -> dict[str, list[tuple[Any, dict[str, Any]]]]:
    """Per spec list: (spec, the fields of its dump that name a literal), computed once per task.

    A field that names no literal (nor its regex escape) is left as it is by the salting, so a
    trial rebuilds only the fields that do, and a spec with none stays the bank's own object.
    """
    out: dict[str, list[tuple[Any, dict[str, Any]]]] = {}
    for name in _SPEC_LISTS:
        rows: list[tuple[Any, dict[str, Any]]] = []
        for spec in getattr(task, name):
            dumped = spec.model_dump()
            fields = {
                key: value
                for key, value in dumped.items()
                if any(v in t or re.escape(v) in t for v in literals for t in strings_in(value))
            }
            rows.append((spec, fields))
        out[name] = rows
    return out


def salted_task(task: Task, codec: CanaryCodec) -> Task:
    """``task`` with its predicates, checkpoints and constraints in this trial's per-trial forms.

    Only the fields of the specs that name a salted literal are rebuilt (``model_copy``: the
    salted values are strings where strings were, as validating the salted dump would give);
    the rest are the bank's own objects.
    """
    if not codec:
        return task
    template = _templates.get(task, lambda t: _template(t, frozenset(codec.forward)))
    update = {
        name: [
            spec.model_copy(update={k: _salt_spec(v, codec, k) for k, v in fields.items()})
            if fields
            else spec
            for spec, fields in rows
        ]
        for name, rows in template.items()
    }
    return task.model_copy(update=update)


_SALTINGS = 512
"""Trials whose (task, literals, canary seed) the salting memo keeps, least recently used out.

A grid runs the same task and epoch once per model (19 times on the calibrated panel), and the
canary seed depends on the task and epoch only (and the run's seed and key), so those trials salt alike. The planner spreads
an epoch over every task (bank/v1: 467); 512 keeps an actor's whole epoch, so every model after
the first finds its salting. Each entry is a codec (a few literals, its bounded text memo) and a
task copy sharing the bank's unsalted specs: a few kB."""

_saltings: OrderedDict[tuple[int, frozenset[str], int], tuple[weakref.ref[Task], CanaryCodec, Task]] = (
    OrderedDict()
)


def trial_salting(task: Task, literals: frozenset[str], seed: int) -> tuple[CanaryCodec, Task]:
    """``(CanaryCodec(literals, seed), salted_task(task, codec))``, shared by the trials that ask alike.

    Both are pure functions of their inputs, and neither changes with use (the codec's own memo
    holds answers of a pure function), so a trial handed another trial's pair behaves exactly as
    with its own. Keyed by the task's identity (held weakly: the entry leaves with the task, and
    a new object at a reused id is a miss), the literal set and the seed.
    """
    key = (id(task), literals, seed)
    hit = _saltings.get(key)
    if hit is not None and hit[0]() is task:
        _saltings.move_to_end(key)
        return hit[1], hit[2]
    codec = CanaryCodec(literals, seed)
    salted = salted_task(task, codec)

    def forget(_ref: weakref.ref[Task], saltings: dict[Any, Any] = _saltings) -> None:
        # The task is gone: so is what was derived from it. (The memo is bound here, not looked up:
        # at interpreter exit module globals are cleared before the last tasks die.)
        saltings.pop(key, None)

    _saltings[key] = (weakref.ref(task, forget), codec, salted)
    if len(_saltings) > _SALTINGS:
        _saltings.popitem(last=False)
    return codec, salted
