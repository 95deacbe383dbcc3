"""Grading: G1 state predicates, G2 answer cards, verdicts and re-grading."""

from apiflow.grading.spec import (
    AnswerFieldSpec,
    CheckpointSpec,
    ConstraintSpec,
    DataFlowSpec,
    NewResponseSpec,
    PredicateSpec,
    WorkspaceValueSpec,
)

__all__ = [
    "AnswerFieldSpec",
    "CheckpointSpec",
    "ConstraintSpec",
    "DataFlowSpec",
    "NewResponseSpec",
    "PredicateSpec",
    "WorkspaceValueSpec",
]
