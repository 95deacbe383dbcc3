"""apiflow-1.1: published-1.0 plus the audit's fixes, and published-1.0 left exactly as it was."""

from __future__ import annotations

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.grading import Evidence, Exchange, grade
from apiflow.grading.provenance import answer_carried, received
from apiflow.grading.rules import APIFLOW_1_1, PUBLISHED, RuleSet
from apiflow.grading.verdict import NOT_RECEIVED
from apiflow.models.adversarial.steps import pattern_path
from apiflow.models.offline import card_text


def test_published_rules_are_untouched() -> None:
    assert PUBLISHED == RuleSet(
        "published-1.0", body_key="last_segment_any_depth", used_in="any_time", stored="substring"
    )
    assert not (PUBLISHED.seen_only or PUBLISHED.typed_numbers or PUBLISHED.answers_received)


def test_apiflow_1_1_is_published_plus_the_fixes() -> None:
    assert (APIFLOW_1_1.body_key, APIFLOW_1_1.stored, APIFLOW_1_1.seen_only) == (
        PUBLISHED.body_key,
        PUBLISHED.stored,
        PUBLISHED.seen_only,
    )
    assert (APIFLOW_1_1.used_in, APIFLOW_1_1.typed_numbers, APIFLOW_1_1.answers_received) == (
        "later",
        True,
        True,
    )


def test_a_replayed_card_fails_g2_under_provenance_only() -> None:
    """Grader level, no per-trial canaries: the key's card with none of the calls."""
    task = load_bank(DEFAULT_BANK).task("sample-w01-sub06")
    evidence = Evidence(answer_text=card_text(task.expected_card), task_text=task.prompt)
    published = grade(task.predicates, [], [], evidence, rules="published-1.0")
    hardened = grade(task.predicates, [], [], evidence, rules="apiflow-1.1")
    assert published.g2_passed and not published.g1_passed
    assert not hardened.g2_passed
    reasons = [r.entry["detail"].get("reason") for r in hardened.results if r.group == "G2"]
    assert NOT_RECEIVED in reasons


def test_a_value_sent_before_it_was_received_counts_only_under_published() -> None:
    task = load_bank(DEFAULT_BANK.parent / "v1").task("v1-w01-sub01")
    flow = next(p for p in task.predicates if getattr(p, "used_in_request_url_pattern", None))
    target = pattern_path(flow.used_in_request_url_pattern)
    token = "tk_from_the_answer_key"
    evidence = Evidence(
        exchanges=(
            Exchange.sent(
                0,
                {"method": "GET", "url": target, "headers": {"Authorization": f"Bearer {token}"}},
                status=401,
                response_body={"error": "invalid_token"},
            ),
            Exchange.sent(
                1,
                {"method": "POST", "url": pattern_path(flow.from_response_url_pattern)},
                status=200,
                response_body={flow.from_body_key: token},
            ),
        )
    )
    assert grade([flow], [], [], evidence, rules="published-1.0").g1_passed
    assert not grade([flow], [], [], evidence, rules="apiflow-1.1").g1_passed


def _exchange(body) -> Exchange:
    return Exchange.sent(0, {"method": "GET", "url": "/v3/x"}, status=200, response_body=body)


def test_provenance_reads_leaves_text_bodies_and_the_prompt() -> None:
    seen = received(
        Evidence(
            exchanges=(
                _exchange({"a": {"ref": "SMK-e36f-0db4"}, "n": [1, 2]}),
                _exchange("plain ref rsv-5d02-8841 ok"),
            ),
            task_text="Manifest mf-3a9c-1107 is drafted.",
        )
    )
    assert answer_carried("string", "smk e36f 0db4", seen) is True  # normalised like the comparator
    assert answer_carried("string", "rsv-5d02-8841", seen) is True
    assert answer_carried("string", "mf-3a9c-1107", seen) is True  # the task itself gave it
    assert answer_carried("string", "smk-e36f-0db5", seen) is False
    assert answer_carried("set", ["smk-e36f-0db4", "mf-3a9c-1107"], seen) is True
    assert answer_carried("set", "smk-e36f-0db4, nope-0000", seen) is False
    assert answer_carried("numeric", 58, seen) is True  # computed values are exempt


def test_an_unknown_body_leaves_provenance_unsettled() -> None:
    from apiflow.grading.evidence import UNKNOWN

    seen = received(Evidence(exchanges=(_exchange(UNKNOWN),)))
    assert answer_carried("string", "smk-e36f-0db4", seen) is None
