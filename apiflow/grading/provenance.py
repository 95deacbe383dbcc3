"""Answer provenance: a card value counts only if this very trial gave it to the agent.

An agent that has read the released answer key knows every card value of a bank task before
the trial starts (the canaries are fixed per bank). Under ``apiflow-1.1`` a ``string`` or
``set`` answer passes only when its value (normalised as the comparator normalises it) is a
leaf of some response body the agent obtained in this trial (or appears in the task's own
text, which needs no labour to know), so a card replayed without the calls fails G2 as well
as G1. ``numeric`` answers are exempt: totals and counts are computed,
not copied. Rationale and measurements: docs/design/011-grader-exploit-audit.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiflow.grading.answer import set_tokens
from apiflow.grading.evidence import Evidence
from apiflow.grading.predicates import leaves


def _key(value: Any) -> str:
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return "".join(ch for ch in text.lower() if ch.isalnum())


@dataclass(frozen=True, slots=True)
class Received:
    """What the responses of one trial carried, in comparator-normalised form.

    Attributes:
        values: Normalised scalar leaves of every known JSON response body.
        texts: Normalised raw text bodies and the task's own text (the prompt): a value
            inside either was given to the agent in this trial.
        unknown: Some response body is unknown (a cut preview in a regraded transcript).
    """

    values: frozenset[str]
    texts: tuple[str, ...]
    unknown: bool

    def carried(self, value: Any) -> bool | None:
        """True when a response carried ``value``; ``None`` when only an unknown body could have."""
        key = _key(value)
        if key and (key in self.values or any(key in text for text in self.texts)):
            return True
        return None if self.unknown else False


def received(evidence: Evidence) -> Received:
    """The normalised values the trial's responses carried."""
    values: set[str] = set()
    texts: list[str] = [_key(evidence.task_text)] if evidence.task_text else []
    unknown = False
    for exchange in evidence.exchanges:
        if not exchange.has_response:
            continue
        if not exchange.body_known:
            unknown = True
            continue
        body = exchange.response_body
        if isinstance(body, str):
            texts.append(_key(body))
        else:
            values.update(_key(leaf) for leaf in leaves(body))
    return Received(frozenset(values - {""}), tuple(texts), unknown)


def answer_carried(comparator: str, got: Any, seen: Received) -> bool | None:
    """Whether the reported answer was received in the trial (always true for ``numeric``)."""
    if comparator == "numeric":
        return True
    if comparator == "set":
        outcomes = [seen.carried(token) for token in set_tokens(got)]
        if all(o is True for o in outcomes):
            return True
        return False if False in outcomes else None
    return seen.carried(got)
