"""A task: one solo subtask or one cumulative chain of a world, as stored in a bank."""

from __future__ import annotations

import re
from typing import Any, Literal, NewType

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from apiflow.grading.spec import (
    AnswerFieldSpec,
    CheckpointSpec,
    ConstraintSpec,
    PredicateSpec,
)
from apiflow.world.patterns import PatternError, compile_pattern

TaskId = NewType("TaskId", str)

TASK_ID_RE = re.compile(
    r"^(?P<bank>[a-z0-9]+)-w(?P<world>\d{2})-(?:sub(?P<sub>\d{2})|chain-1to(?P<len>\d{2}))\Z"
)
"""A bank's task id. ``\\Z``, not ``$``: ``$`` also matches before a final newline, and a task id
ends up in file and member names (``apiflow.results.taskid.check_task_id``)."""

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

    @model_validator(mode="after")
    def _linear_patterns(self) -> Task:
        # Every URL pattern the grader will evaluate must compile under RE2 (linear time): a bank
        # with a backreference or look-around is refused here, naming the field, not at grading.
        for where, pattern in self.url_patterns():
            try:
                compile_pattern(pattern)
            except PatternError as exc:
                raise ValueError(f"{where}: {exc}") from None
        return self

    def url_patterns(self) -> list[tuple[str, str]]:
        """Every (field, pattern) the grader matches against URLs for this task."""
        found: list[tuple[str, str]] = []
        for index, spec in enumerate(self.predicates):
            for name in ("url_pattern", "from_response_url_pattern", "used_in_request_url_pattern"):
                value = getattr(spec, name, None)
                if isinstance(value, str):
                    found.append((f"predicates.{index}.{name}", value))
        found += [(f"checkpoints.{i}.url_pattern", c.url_pattern) for i, c in enumerate(self.checkpoints)]
        found += [(f"constraints.{i}.url_pattern", c.url_pattern) for i, c in enumerate(self.constraints)]
        return found

    @property
    def answer_fields(self) -> list[AnswerFieldSpec]:
        """The G2 predicates, in card order."""
        return [p for p in self.predicates if isinstance(p, AnswerFieldSpec)]

    @property
    def expected_card(self) -> dict[str, Any]:
        """The answer card a correct run reports."""
        return {p.field: p.expected for p in self.answer_fields}
