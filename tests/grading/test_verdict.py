"""Verdict rule, partial score, explanations, segment diagnostics, checkpoints and constraints."""

from __future__ import annotations

from apiflow.grading import grade
from apiflow.grading.diagnostics import Tagged, segment_diagnostics
from apiflow.grading.spec import (
    AnswerFieldSpec,
    CheckpointSpec,
    ConstraintSpec,
    DataFlowSpec,
    WorkspaceValueSpec,
)

from .helpers import Script, card

PLAN = DataFlowSpec(from_response_url_pattern=r"v3/plans/p\-1/commit", from_body_key="status")
STATUS = AnswerFieldSpec(field="status", expected="committed", comparator="string")
COUNT = AnswerFieldSpec(field="count", expected=3, comparator="numeric")


def committed_run(answer: str) -> Script:
    s = Script()
    s.execute(
        {"method": "POST", "url": "/v3/plans/p-1/commit", "body": {"confirm": True}},
        body={"status": "committed", "count": 3},
    )
    s.say(answer)
    return s


def test_pass_needs_g1_and_g2() -> None:
    g = grade([STATUS, COUNT, PLAN], [], [], committed_run(card(status="Committed", count="3")).evidence())
    assert (g.verdict, g.passed, g.g1_passed, g.g2_passed, g.partial_score) == ("C", True, True, True, 1.0)
    assert g.failure_reason == "all signature predicates matched (G1 state ✓, G2 answer ✓)"
    assert g.verifier["value"] == "C" and g.verifier["explanation"] == g.failure_reason
    assert g.determinate and g.abstained is None


def test_delivery_only_failure_names_the_answer_field() -> None:
    g = grade([STATUS, COUNT, PLAN], [], [], committed_run(card(status="checking", count=3)).evidence())
    assert (g.verdict, g.g1_passed, g.g2_passed) == ("I", True, False)
    assert g.partial_score == 2 / 3
    assert g.failure_reason == (
        "2/3 predicates matched; failed: G2 answer; first failure: answer field 'status': "
        "'checking' != expected 'committed'"
    )


def test_g1_failure_is_named_first_even_when_answers_come_first() -> None:
    s = Script()
    s.say("no card")
    g = grade([STATUS, PLAN], [], [], s.evidence())
    assert g.failure_reason.startswith(
        "0/2 predicates matched; failed: G1 state, G2 answer; first failure: "
        "data_flow predicate #1 failed: no response matched"
    )
    entries = g.verifier["metadata"]["predicates"]
    assert entries[0]["detail"]["reason"] == "field absent from the declared JSON answer card"
    assert "got" not in entries[0]["detail"]


def test_abstention_fails_with_zero_partial_even_when_everything_matched() -> None:
    s = committed_run(card(status="committed", count=3))
    s.abstain("clarify", "Which plan?")
    g = grade([STATUS, COUNT, PLAN], [], [], s.evidence())
    assert (g.verdict, g.g1_passed, g.g2_passed, g.partial_score) == ("I", True, True, 0.0)
    assert g.abstained == "clarify"
    assert g.failure_reason == "agent abstained (clarify): 'Which plan?'"
    assert g.predicates_passed == 3  # still evaluated and listed


def test_checkpoints_and_constraints_are_reported_but_never_change_the_verdict() -> None:
    s = committed_run(card(status="committed", count=3))
    checkpoints = [
        CheckpointSpec(id="confirm", url_pattern="commit$", method="POST", body_contains={"confirm": True}),
        CheckpointSpec(id="confirm_read", url_pattern="confirm$"),
    ]
    constraints = [
        ConstraintSpec(id="no_v3", kind="forbid", url_pattern="v3/plans"),
        ConstraintSpec(id="retry_header", kind="require", url_pattern="commit", header="X-Retry"),
        ConstraintSpec(id="agency", kind="require", url_pattern="v9/", header="X-Agency"),
    ]
    g = grade([STATUS, PLAN], checkpoints, constraints, s.evidence())
    assert g.verdict == "C"
    assert [c["hit"] for c in g.checkpoints] == [True, False]
    assert [(c["violated"], c["applicable"]) for c in g.constraints] == [
        (True, True),
        (True, True),
        (False, False),
    ]
    assert g.constraints[0]["detail"] == "forbidden url called: /v3/plans/p-1/commit"
    assert g.constraints[1]["detail"] == "required header 'X-Retry' missing on /v3/plans/p-1/commit"
    sub = g.verifier["metadata"]["sub_predicates"]
    assert sub["checkpoints"][0] == {
        "id": "confirm",
        "desc": None,
        "hit": True,
        "applicable": True,
        "explain": "",
    }


def test_segment_diagnostics_for_a_chain_with_carried_segments() -> None:
    s = committed_run(card(status="committed", count=3))
    early = DataFlowSpec(from_response_url_pattern="v3/vehicles", from_body_key="vehicle_id", segment=11)
    g = grade(
        [
            STATUS.model_copy(update={"segment": 14}),
            COUNT.model_copy(update={"segment": 14}),
            PLAN.model_copy(update={"segment": 14}),
            early,
        ],
        [],
        [],
        s.evidence(),
    )
    diag = g.segment_diagnostics
    assert diag["failure_stage"] == 11 and diag["symptom_stage"] is None and diag["tagged_segments"] == 2
    assert diag["per_segment"]["11"] == {
        "passed": 0,
        "total": 1,
        "fraction": 0.0,
        "g1_passed": False,
        "g2_passed": True,
    }
    assert list(diag["per_segment"]) == ["11", "14"]


def test_segment_stages_and_rounding() -> None:
    results = [
        Tagged(4, "G2", True),
        Tagged(4, "G2", True),
        Tagged(4, "G1", False),
        Tagged(None, "G1", False),
        Tagged(5, "G2", False),
    ]
    diag = segment_diagnostics(results)
    assert diag["per_segment"]["4"]["fraction"] == 0.667
    assert (diag["failure_stage"], diag["symptom_stage"], diag["tagged_segments"]) == (4, 5, 2)
    assert segment_diagnostics([Tagged(None, "G1", True)]) == {
        "per_segment": {},
        "failure_stage": None,
        "symptom_stage": None,
        "tagged_segments": 0,
    }


def test_payload_shape_and_labels() -> None:
    s = committed_run(card(status="committed", count=3))
    s.write_variable("plan", "p-1")
    g = grade([STATUS, PLAN, WorkspaceValueSpec(value="p-1")], [], [], s.evidence(), generation="newer")
    meta = g.verifier["metadata"]
    assert list(g.verifier) == ["scorer", "value", "explanation", "metadata"]
    assert list(meta["sub_predicates"])[:4] == [
        "tool_call_count",
        "new_response_count",
        "new_variable_count",
        "demoted_predicates",
    ]
    labels = [(p["label"], p.get("key")) for p in meta["predicates"]]
    assert labels == [
        ("answer.status == 'committed'", "answer_schema.status"),
        ("data_flow#1", None),
        ("workspace_values#1 · p-1", "workspace_values#1.1"),
    ]
    assert meta["partial_score"] == 1.0 and meta["rules"] == "published-1.0"


def test_unknown_rule_set_is_a_usage_error() -> None:
    import pytest

    from apiflow.errors import UsageError

    with pytest.raises(UsageError):
        grade([STATUS], [], [], Script().evidence(), rules="lenient")
