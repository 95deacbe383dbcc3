"""Compose a chain task from its world's subtasks 1..K (REFERENCE §4).

A chain file stores only what is its own (id, K, prompt, and the earlier segments whose G1
predicates it carries); everything else is derived here, so a chain can never drift from the
subtasks it is made of.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from apiflow.bank.task import GoldenCall, GoldenStep, Task
from apiflow.grading.spec import DataFlowSpec, NewResponseSpec, PredicateSpec, WorkspaceValueSpec

_REF = re.compile(r"\{\{ref:(\d+)\}\}")


class ChainFile(BaseModel):
    """What a chain's data file holds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    world: str
    kind: str = "chain"
    length: int = Field(ge=2)
    prompt: str
    carries: list[int] = Field(
        default_factory=list,
        description="Earlier segments (1..K-1) whose G1 predicates this chain grades too (REFERENCE §4.4)",
    )

    @model_validator(mode="after")
    def _carried_segments(self) -> ChainFile:
        if self.carries != sorted(set(self.carries)) or any(not 1 <= j < self.length for j in self.carries):
            raise ValueError(f"carries must be increasing segment numbers in 1..{self.length - 1}")
        return self


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
                decoy = [
                    GoldenCall(name=c.name, arguments=_shift_refs(c.arguments, offset)) for c in step.decoy
                ]
            steps.append(GoldenStep(calls=calls, decoy=decoy, essential=step.essential, segment=index))
    return steps


def _tagged(predicate: PredicateSpec, segment: int) -> PredicateSpec:
    """``predicate`` tagged with ``segment`` unless it already names its own."""
    return predicate.model_copy(
        update={"segment": predicate.segment if predicate.segment is not None else segment}
    )


CARRIED_KINDS = (DataFlowSpec, WorkspaceValueSpec)
"""What a chain carries of an earlier segment: its G1 state checks. ``new_response`` is dropped from
chains as from segment K (REFERENCE §4.4), and an earlier segment's card is not the chain's card."""


def carried_predicates(subs: list[Task], segments: list[int]) -> list[PredicateSpec]:
    """The G1 predicates of subs ``segments`` (1-based), tagged with their origin segment, in order."""
    return [_tagged(p, j) for j in segments for p in subs[j - 1].predicates if isinstance(p, CARRIED_KINDS)]


def compose_chain(chain: ChainFile, subs: list[Task]) -> Task:
    """The full chain task from its file and subtasks 1..K (in order).

    Predicates are sub K's (``new_response`` dropped), then, for every segment the file
    ``carries``, that segment's G1 predicates tagged with their own segment number: a chain is
    then refused for an earlier step whose state never landed, and ``segment_diagnostics``
    still names that step (``failure_stage``).
    """
    last = subs[-1]
    predicates = [_tagged(p, chain.length) for p in last.predicates if not isinstance(p, NewResponseSpec)]
    predicates += carried_predicates(subs, chain.carries)
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
