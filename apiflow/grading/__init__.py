"""Grading: G1 state predicates, G2 answer cards, verdicts and re-grading.

Public face: ``grade(predicates, checkpoints, constraints, evidence, *, rules=...)`` over an
``Evidence`` built by ``evidence_from_transcript`` (published schema-1.0 trials) or
``evidence_from_workspace`` (our own live trials).
"""

from apiflow.grading.answer import compare, extract_card, final_message
from apiflow.grading.evidence import UNKNOWN, Abstention, Evidence, Exchange
from apiflow.grading.live import evidence_from_workspace
from apiflow.grading.published import generation_of, spec_from_published, specs_from_verifier
from apiflow.grading.rules import PUBLISHED, RULE_SETS, STRICT, RuleSet, rule_set
from apiflow.grading.spec import (
    AnswerFieldSpec,
    CheckpointSpec,
    ConstraintSpec,
    DataFlowSpec,
    NewResponseSpec,
    PredicateSpec,
    WorkspaceValueSpec,
)
from apiflow.grading.transcript import evidence_from_transcript
from apiflow.grading.verdict import Grade, PredicateResult, grade

__all__ = [
    "PUBLISHED",
    "RULE_SETS",
    "STRICT",
    "UNKNOWN",
    "Abstention",
    "AnswerFieldSpec",
    "CheckpointSpec",
    "ConstraintSpec",
    "DataFlowSpec",
    "Evidence",
    "Exchange",
    "Grade",
    "NewResponseSpec",
    "PredicateResult",
    "PredicateSpec",
    "RuleSet",
    "WorkspaceValueSpec",
    "compare",
    "evidence_from_transcript",
    "evidence_from_workspace",
    "extract_card",
    "final_message",
    "generation_of",
    "grade",
    "rule_set",
    "spec_from_published",
    "specs_from_verifier",
]
