"""A task: one solo subtask or one cumulative chain of a world, as stored in a bank."""

from __future__ import annotations

import re
from typing import Any, Literal, NewType

from pydantic import BaseModel, ConfigDict, Field, field_validator

from apiflow.grading.spec import (
    AnswerFieldSpec,
    CheckpointSpec,
    ConstraintSpec,
    PredicateSpec,
)

TaskId = NewType("TaskId", str)

TASK_ID_RE = re.compile(r"^(?P<bank>[a-z0-9]+)-w(?P<world>\d{2})-(?:sub(?P<sub>\d{2})|chain-1to(?P<len>\d{2}))$")

Scope = Literal["vault", "local", "global"]


class SeedVariable(BaseModel):
    """A variable the workspace starts with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: Scope
    name: str
    value: Any


class GoldenCall(BaseModel):
    """One tool call of a golden solution.

    String arguments may contain ``{{ref:N}}``: the response ref of the N-th ``execute``
    of this solution (0-based), because response refs are minted per trial.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: dict[str, Any]


class GoldenStep(BaseModel):
    """Calls the oracle sends in one assistant turn (in parallel).

    ``decoy`` is the wrong-but-plausible alternative a weak agent takes instead
    (a deprecated route, a stale seeded value); ``essential`` marks steps whose
    omission must fail the task (the grader triad skips them one at a time).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: list[GoldenCall]
    decoy: list[GoldenCall] | None = None
    essential: bool = True
    segment: int | None = None


class Task(BaseModel):
    """A bank task: prompt, seed workspace, grading spec and a golden solution."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    world: str
    kind: Literal["solo", "chain"]
    length: int = Field(ge=1, description="Sub index for solo, K for chain 1..K")
    prompt: str
    card_fields: list[str]
    seed: list[SeedVariable] = Field(default_factory=list)
    predicates: list[PredicateSpec]
    checkpoints: list[CheckpointSpec] = Field(default_factory=list)
    constraints: list[ConstraintSpec] = Field(default_factory=list)
    golden: list[GoldenStep] = Field(default_factory=list)
    world_state: dict[str, Any] = Field(default_factory=dict)
    axis: str | None = None
    difficulty: str | None = None

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not TASK_ID_RE.match(value):
            raise ValueError(f"task id {value!r} is not <bank>-wNN-subMM or <bank>-wNN-chain-1toKK")
        return value

    @property
    def answer_fields(self) -> list[AnswerFieldSpec]:
        """The G2 predicates, in card order."""
        return [p for p in self.predicates if isinstance(p, AnswerFieldSpec)]

    @property
    def expected_card(self) -> dict[str, Any]:
        """The answer card a correct run reports."""
        return {p.field: p.expected for p in self.answer_fields}
