"""The grade of one trial: predicates, verdict, partial score, diagnostics, verifier payload.

``verdict C ⇔ G1 ∧ G2 ∧ not abstained`` (REFERENCE §5.3). Checkpoints and constraints
are evaluated and reported, never consulted for the verdict. The payload follows the
published ``verifier`` shape so that our records and the published ones read alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from apiflow.grading import predicates as g1
from apiflow.grading.answer import Generation, compare, extract_card
from apiflow.grading.diagnostics import checkpoint, constraint, segment_diagnostics
from apiflow.grading.evidence import Evidence
from apiflow.grading.provenance import Received, answer_carried, received
from apiflow.grading.rules import RuleSet, rule_set
from apiflow.grading.spec import (
    AnswerFieldSpec,
    CheckpointSpec,
    ConstraintSpec,
    DataFlowSpec,
    NewResponseSpec,
    WorkspaceValueSpec,
)

SCORER = "apiflow_grader"
PASS_EXPLANATION = "all signature predicates matched (G1 state ✓, G2 answer ✓)"
ABSENT = "field absent from the declared JSON answer card"
NOT_RECEIVED = "value matches, but no response of this trial carried it (answer provenance)"
Spec = AnswerFieldSpec | DataFlowSpec | NewResponseSpec | WorkspaceValueSpec


class PredicateResult(NamedTuple):
    """One graded predicate.

    Attributes:
        kind: ``answer_schema`` | ``data_flow`` | ``new_response`` | ``workspace_values``.
        label: Published-style label (``data_flow#2``, ``answer.status == 'committed'``).
        group: ``G1`` (state) or ``G2`` (answer).
        segment: Chain step the predicate checks, ``None`` when untagged.
        passed: ``None`` when the evidence cannot settle it (regrading cut previews).
        message: First-failure message when it did not pass.
        entry: The predicate as it appears in the verifier payload.
    """

    kind: str
    label: str
    group: Literal["G1", "G2"]
    segment: int | None
    passed: bool | None
    message: str
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Grade:
    """The grade of a trial (see module docstring for the rules)."""

    verdict: Literal["C", "I"]
    passed: bool
    g1_passed: bool
    g2_passed: bool
    failure_reason: str
    partial_score: float
    predicates_passed: int
    predicates_total: int
    abstained: str | None
    results: tuple[PredicateResult, ...]
    checkpoints: tuple[dict[str, Any], ...]
    constraints: tuple[dict[str, Any], ...]
    segment_diagnostics: dict[str, Any]
    verifier: dict[str, Any]
    rules: str
    generation: Generation

    @property
    def determinate(self) -> bool:
        """False when some predicate could not be settled from the evidence."""
        return all(r.passed is not None for r in self.results)

    @property
    def unsettled(self) -> tuple[str, ...]:
        """Labels of the predicates the evidence could not settle."""
        return tuple(r.label for r in self.results if r.passed is None)


def _answer(
    spec: AnswerFieldSpec,
    card: dict[str, Any],
    generation: Generation,
    typed: bool = False,
    seen: Received | None = None,
) -> PredicateResult:
    detail: dict[str, Any] = {
        "field": spec.field,
        "expected": spec.expected,
        "comparator": spec.comparator,
        "explain": spec.explain,
        "prompt_quote": spec.prompt_quote,
    }
    passed: bool | None
    if spec.field not in card:
        detail["reason"] = ABSENT
        passed, message = False, f"answer field {spec.field!r} missing from the declared JSON answer card"
    else:
        got = card[spec.field]
        outcome = compare(spec.comparator, got, spec.expected, generation, typed=typed)
        detail["got"] = got
        passed, reason = outcome.passed, outcome.reason
        if passed and seen is not None:
            carried = answer_carried(spec.comparator, got, seen)
            if carried is not True:
                passed, reason = carried, NOT_RECEIVED
                if carried is None:
                    detail["unsettled"] = True  # only an unknown (cut) body could have carried it
        if reason:
            detail["reason"] = reason
        message = f"answer field {spec.field!r}: {reason}"
    label = f"answer.{spec.field} == {spec.expected!r}"
    entry = {
        "label": label,
        "key": f"answer_schema.{spec.field}",
        "group": "G2",
        "segment": spec.segment,
        "passed": passed,
        "detail": detail,
    }
    return PredicateResult(
        "answer_schema", label, "G2", spec.segment, passed, "" if passed else message, entry
    )


def _g1_entry(
    label: str, outcome: g1.Outcome, segment: int | None, detail: dict[str, Any], key: str | None = None
) -> dict[str, Any]:
    if outcome.passed is not True:
        detail = {**detail, "reason": outcome.message}
        if outcome.passed is None:
            detail["unsettled"] = True
    if key is None:
        return {"label": label, "group": "G1", "passed": outcome.passed, "segment": segment, "detail": detail}
    # workspace_values entries carry a key and put segment before passed, as published
    return {
        "label": label,
        "key": key,
        "group": "G1",
        "segment": segment,
        "passed": outcome.passed,
        "detail": detail,
    }


def _state(spec: Spec, evidence: Evidence, rules: RuleSet, numbers: dict[str, int]) -> PredicateResult:
    numbers[spec.kind] = n = numbers.get(spec.kind, 0) + 1
    if isinstance(spec, DataFlowSpec):
        outcome = g1.data_flow(spec, evidence, rules, n)
        label, key = f"data_flow#{n}", None
        detail = {
            "explain": spec.explain,
            "prompt_quote": spec.prompt_quote,
            "segment": spec.segment,
            "from_response_url_pattern": spec.from_response_url_pattern,
            "from_body_key": spec.from_body_key,
            "from_status": spec.from_status,
            "must_be_stored": spec.must_be_stored,
            "used_in_request_url_pattern": spec.used_in_request_url_pattern,
        }
    elif isinstance(spec, NewResponseSpec):
        outcome = g1.new_response(spec, evidence, rules, n)
        label, key, detail = f"new_response#{n}", None, g1.new_response_detail(spec)
    elif isinstance(spec, WorkspaceValueSpec):
        outcome = g1.workspace_values(spec, evidence, n)
        label, key = f"workspace_values#{n} · {spec.value}", f"workspace_values#{n}.1"
        detail = {"value": spec.value, "explain": spec.explain, "prompt_quote": spec.prompt_quote}
    else:
        raise TypeError(f"not a G1 predicate spec: {spec!r}")
    entry = _g1_entry(label, outcome, spec.segment, detail, key)
    return PredicateResult(spec.kind, label, "G1", spec.segment, outcome.passed, outcome.message, entry)


def evaluate(
    predicates: Sequence[Spec], evidence: Evidence, rules: RuleSet, generation: Generation
) -> tuple[PredicateResult, ...]:
    """Every predicate graded, in the order the task lists them."""
    card = extract_card(evidence.answer_text, evidence.answer_reasoning)
    numbers: dict[str, int] = {}
    seen = received(evidence) if rules.answers_received else None
    results: list[PredicateResult] = []
    for p in predicates:
        if isinstance(p, AnswerFieldSpec):
            results.append(_answer(p, card, generation, rules.typed_numbers, seen))
        else:
            results.append(_state(p, evidence, rules, numbers))
    return tuple(results)


def _explanation(results: Sequence[PredicateResult], g1_ok: bool, g2_ok: bool, evidence: Evidence) -> str:
    if evidence.abstention is not None:
        return f"agent abstained ({evidence.abstention.kind}): {evidence.abstention.reason!r}"
    if g1_ok and g2_ok:
        return PASS_EXPLANATION
    passed = sum(r.passed is True for r in results)
    groups = ", ".join(name for name, ok in (("G1 state", g1_ok), ("G2 answer", g2_ok)) if not ok)
    # A state failure is named first: the answer is usually wrong *because* the state is.
    group = "G1" if not g1_ok else "G2"
    first = next(r.message for r in results if r.group == group and r.passed is not True)
    return f"{passed}/{len(results)} predicates matched; failed: {groups}; first failure: {first}"


def grade(
    predicates: Sequence[Spec],
    checkpoints: Sequence[CheckpointSpec],
    constraints: Sequence[ConstraintSpec],
    evidence: Evidence,
    *,
    rules: str | RuleSet = "published-1.0",
    generation: Generation = "original",
) -> Grade:
    """Grade one trial.

    Args:
        predicates: The task's G1/G2 predicate specs, in task order.
        checkpoints: Diagnostic checkpoint specs (never change the verdict).
        constraints: Diagnostic constraint specs (never change the verdict).
        evidence: What the trial left behind.
        rules: Rule set name (``published-1.0``, ``strict-1.0``, ``apiflow-1.1``) or a ``RuleSet``.
        generation: Answer-comparison generation (``newer`` only to regrade board-update outputs).

    Returns:
        The grade; an unsettled predicate counts as not passed in the verdict and makes
        ``Grade.determinate`` false.

    Raises:
        UsageError: Unknown rule-set name.
    """
    ruleset = rule_set(rules)
    results = evaluate(predicates, evidence, ruleset, generation)
    g1_ok = g2_ok = True
    n_passed = 0
    for r in results:
        if r.passed is True:
            n_passed += 1
        elif r.group == "G1":
            g1_ok = False
        elif r.group == "G2":
            g2_ok = False
    abstained = evidence.abstained
    passed = g1_ok and g2_ok and abstained is None
    total = len(results)
    partial = 0.0 if abstained else (n_passed / total if total else 1.0)
    explanation = _explanation(results, g1_ok, g2_ok, evidence)
    cps = tuple([checkpoint(c, evidence) for c in checkpoints])
    cons = tuple([constraint(c, evidence) for c in constraints])
    segments = segment_diagnostics(results)
    sub: dict[str, Any] = {
        "tool_call_count": evidence.tool_call_count,
        "new_response_count": evidence.new_response_count,
        "new_variable_count": evidence.new_variable_count,
    }
    if generation == "newer":
        sub["demoted_predicates"] = []
    sub.update(
        {
            "checkpoints": list(cps),
            "constraints": list(cons),
            "g1_passed": g1_ok,
            "g2_passed": g2_ok,
            "predicates_passed": n_passed,
            "predicates_total": total,
            "segment_diagnostics": segments,
        }
    )
    verdict: Literal["C", "I"] = "C" if passed else "I"
    verifier = {
        "scorer": SCORER,
        "value": verdict,
        "explanation": explanation,
        "metadata": {
            "sub_predicates": sub,
            "partial_score": partial,
            "predicates": [r.entry for r in results],
            "llm_verify": {"ran": False, "reason": "no LLM judge in apiflow: deterministic only"},
            "rules": ruleset.name,
            "generation": generation,
        },
    }
    return Grade(
        verdict,
        passed,
        g1_ok,
        g2_ok,
        explanation,
        partial,
        n_passed,
        total,
        abstained,
        results,
        cps,
        cons,
        segments,
        verifier,
        ruleset.name,
        generation,
    )
