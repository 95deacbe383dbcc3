"""Compose a chain task from its world's subtasks 1..K (REFERENCE §4).

A chain file stores only what is its own (id, K, prompt); everything else is derived
here, so a chain can never drift from the subtasks it is made of.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from apiflow.bank.task import GoldenCall, GoldenStep, Task
from apiflow.grading.spec import NewResponseSpec, PredicateSpec

_REF = re.compile(r"\{\{ref:(\d+)\}\}")


class ChainFile(BaseModel):
    """What a chain's data file holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    world: str
    kind: str = "chain"
    length: int = Field(ge=2)
    prompt: str


def _shift_refs(value: Any, offset: int) -> Any:
    if isinstance(value, str):
        return _REF.sub(lambda m: f"{{{{ref:{int(m.group(1)) + offset}}}}}", value)
    if isinstance(value, dict):
        return {k: _shift_refs(v, offset) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift_refs(v, offset) for v in value]
    return value


def _executes(steps: list[GoldenStep]) -> int:
    return sum(1 for step in steps for call in step.calls if call.name == "execute")


def chain_golden(subs: list[Task]) -> list[GoldenStep]:
    """Golden steps of subs 1..K in order, each ``{{ref:N}}`` renumbered chain-wide."""
    steps: list[GoldenStep] = []
    for index, sub in enumerate(subs, start=1):
        offset = _executes(steps)
        for step in sub.golden:
            calls = [GoldenCall(name=c.name, arguments=_shift_refs(c.arguments, offset)) for c in step.calls]
            decoy = None
            if step.decoy is not None:
                decoy = [GoldenCall(name=c.name, arguments=_shift_refs(c.arguments, offset)) for c in step.decoy]
            steps.append(GoldenStep(calls=calls, decoy=decoy, essential=step.essential, segment=index))
    return steps


def compose_chain(chain: ChainFile, subs: list[Task]) -> Task:
    """The full chain task from its file and subtasks 1..K (in order)."""
    last = subs[-1]
    predicates: list[PredicateSpec] = [
        p.model_copy(update={"segment": p.segment if p.segment is not None else chain.length})
        for p in last.predicates
        if not isinstance(p, NewResponseSpec)
    ]
    return Task(
        id=chain.id,
        world=chain.world,
        kind="chain",
        length=chain.length,
        prompt=chain.prompt,
        card_fields=list(last.card_fields),
        seed=list(subs[0].seed),
        predicates=predicates,
        checkpoints=[c for sub in subs for c in sub.checkpoints],
        constraints=[c for sub in subs for c in sub.constraints],
        golden=chain_golden(subs),
        world_state=dict(subs[0].world_state),
        axis="chain",
        difficulty=last.difficulty,
    )
