"""Named G1 rule sets: how loosely each predicate kind reads the evidence.

``published-1.0`` reproduces the grader that scored APIFlow-Bench 1.0 (REFERENCE §5.7,
verified on all 56,037 published trials); ``strict-1.0`` closes the loopholes that
grader left open, for banks of our own. Rationale: docs/design/010-grading-rules.md.
``apiflow-1.1`` is ``published-1.0`` with exactly the fixes the grader-exploit audit
needed (docs/design/011-grader-exploit-audit.md); it grades our live trials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from apiflow.errors import UsageError

BodyKeyRule = Literal["last_segment_any_depth", "dotted_path"]
UseRule = Literal["any_time", "later"]
StoreRule = Literal["substring", "equal_leaf"]


@dataclass(frozen=True, slots=True)
class RuleSet:
    """How G1 predicates match the evidence.

    Attributes:
        name: The rule-set name recorded in every verifier payload.
        body_key: ``from_body_key`` matched by its last segment at any depth of the
            body, or as a dotted path from the root (lists are walked element-wise).
        used_in: Whether a value must reappear in a request sent *after* the response
            that carried it, or in any request of the trial.
        stored: ``must_be_stored``: a value is a substring of a variable's final value,
            or equals the variable's value or one of its leaves.
        seen_only: Count only responses whose whole body the agent saw (a complete
            preview or a ``read``); a response it knew only by a cut preview carries nothing.
        typed_numbers: A ``numeric`` answer field refuses booleans (Python counts ``True``
            as 1, so ``true`` would pass for a count of one).
        answers_received: A ``string``/``set`` answer passes only if a response of this trial
            carried the value (``apiflow.grading.provenance``): the bank's canaries are fixed,
            so a card copied from the released answer key must not pass on its own.
    """

    name: str
    body_key: BodyKeyRule
    used_in: UseRule
    stored: StoreRule
    seen_only: bool = False
    typed_numbers: bool = False
    answers_received: bool = False


PUBLISHED = RuleSet(
    "published-1.0", body_key="last_segment_any_depth", used_in="any_time", stored="substring"
)
STRICT = RuleSet("strict-1.0", body_key="dotted_path", used_in="later", stored="equal_leaf", seen_only=True)

APIFLOW_1_1 = RuleSet(
    "apiflow-1.1",
    body_key="last_segment_any_depth",
    used_in="later",
    stored="substring",
    typed_numbers=True,
    answers_received=True,
)
"""``published-1.0`` plus the audit's fixes: a value counts as re-used only in a request sent
after the response that carried it (an agent that sends the answer key's value first and
fetches it afterwards did not carry it), a card value only if this trial received it, and no
booleans for numbers. Any-depth keys and
substring storage stay: the bank's predicates are written for them (``strict-1.0``'s
dotted paths and seen-bodies rule fail the oracle on 127 ``bank/v1`` tasks)."""

RULE_SETS: dict[str, RuleSet] = {r.name: r for r in (PUBLISHED, STRICT, APIFLOW_1_1)}


def rule_set(name: str | RuleSet) -> RuleSet:
    """The rule set called ``name`` (a ``RuleSet`` passes through).

    Raises:
        UsageError: The name is not a known rule set.
    """
    if isinstance(name, RuleSet):
        return name
    try:
        return RULE_SETS[name]
    except KeyError:
        raise UsageError(f"unknown grading rule set {name!r} (known: {', '.join(RULE_SETS)})") from None
