"""What a task asks the grader to check: predicate, checkpoint and constraint specs.

These are the *inputs* of grading, stored in bank task files. Their fields follow the
``detail`` shapes of the published verifier payload (REFERENCE §5.1) so that a
published trial's recorded predicates can be read back as a spec for regrading.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Comparator = Literal["string", "numeric", "set"]
Expected = str | int | float | list[str]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    explain: str = ""
    prompt_quote: str = ""
    segment: int | None = None


class AnswerFieldSpec(_Spec):
    """G2: one answer-card field compared with ``comparator``."""

    kind: Literal["answer_schema"] = "answer_schema"
    field: str
    expected: Expected
    comparator: Comparator


class DataFlowSpec(_Spec):
    """G1: a value obtained from a real response of this trial (and maybe re-used or stored)."""

    kind: Literal["data_flow"] = "data_flow"
    from_response_url_pattern: str
    from_body_key: str
    from_status: int = 200
    must_be_stored: bool = False
    used_in_request_url_pattern: str | None = None


class NewResponseSpec(_Spec):
    """G1: some response of this trial matches the URL pattern (and status/method when given)."""

    kind: Literal["new_response"] = "new_response"
    url_pattern: str
    status: int | None = None
    method: str | None = None
    body_has_keys: list[str] = Field(default_factory=list)


class WorkspaceValueSpec(_Spec):
    """G1: the value is held by some variable the agent left in the workspace."""

    kind: Literal["workspace_values"] = "workspace_values"
    value: str


PredicateSpec = Annotated[
    AnswerFieldSpec | DataFlowSpec | NewResponseSpec | WorkspaceValueSpec,
    Field(discriminator="kind"),
]


class CheckpointSpec(BaseModel):
    """Diagnostic: a request a correct run makes (never changes the verdict)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    explain: str = ""
    url_pattern: str
    method: str | None = None
    status: int | None = None
    body_contains: dict[str, object] = Field(default_factory=dict)


class ConstraintSpec(BaseModel):
    """Diagnostic: ``forbid`` a route, or ``require`` a header on requests to a route."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    kind: Literal["forbid", "require"]
    explain: str = ""
    url_pattern: str
    method: str | None = None
    header: str | None = None
