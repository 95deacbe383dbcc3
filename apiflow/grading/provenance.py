"""Answer provenance: a card value counts only if this very trial gave it to the agent.

An agent that has read the released answer key knows every card value of a bank task before
the trial starts (the canaries are fixed per bank). Under ``apiflow-1.1`` a ``string`` or
``set`` answer passes only when its value (normalised as the comparator normalises it) is a
leaf of some response body the agent obtained in this trial (or appears in the task's own
text, which needs no labour to know), so a card replayed without the calls fails G2 as well
as G1. ``numeric`` answers are exempt: totals and counts are computed,
not copied. Rationale: docs/design/011-grader-exploit-audit.md;
measurements: docs/results/011-grader-exploit-audit-measurements.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

from apiflow.grading.answer import set_tokens
from apiflow.grading.evidence import UNKNOWN, Evidence
from apiflow.grading.predicates import leaves

_NOT_ALNUM = re.compile(r"[\W_]+")
r"""What the comparator drops (``str.isalnum`` is ``\w`` without the underscore)."""


def _key(value: Any) -> str:
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return _NOT_ALNUM.sub("", text.lower())


class Received:
    """What the responses of one trial carried, looked up the cheap way first.

    A value passes at once when it appears verbatim in a response's serialised body (the common
    case: the agent copied it); only otherwise are the comparator-normalised leaves of every
    body computed (once) and compared. The task's own text counts as carried too.
    """

    def __init__(self, bodies: list[Any], task_text: str, unknown: bool) -> None:
        self._bodies = bodies
        self._task_text = task_text
        # Serialised bodies, filled on demand from the last body back (see ``_verbatim``).
        self._raw: list[str] = []
        self._normalised: tuple[frozenset[str], tuple[str, ...]] | None = None
        self.unknown = unknown

    def _verbatim(self, text: str) -> bool:
        """Whether ``text`` is a substring of the task text or of some serialised body.

        Bodies are serialised only as far as the search needs, starting from the last one
        (a card value usually comes from the trial's last responses); the answer is the same
        whatever the order, and each body is serialised at most once per trial.
        """
        if text in self._task_text:
            return True
        raw, bodies = self._raw, self._bodies
        for serialised in raw:
            if text in serialised:
                return True
        for i in range(len(bodies) - 1 - len(raw), -1, -1):
            body = bodies[i]
            serialised = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
            raw.append(serialised)
            if text in serialised:
                return True
        return False

    def _index(self) -> tuple[frozenset[str], tuple[str, ...]]:
        if self._normalised is None:
            values: set[str] = set()
            texts = [_key(self._task_text)] if self._task_text else []
            for body in self._bodies:
                if isinstance(body, str):
                    texts.append(_key(body))
                else:
                    values.update(_key(leaf) for leaf in leaves(body))
            self._normalised = frozenset(values - {""}), tuple(texts)
        return self._normalised

    def carried(self, value: Any) -> bool | None:
        """True when a response carried ``value``; ``None`` when only an unknown body could have."""
        text = value if isinstance(value, str) else None
        if text and self._verbatim(text):
            return True
        key = _key(value)
        values, texts = self._index()
        if key and (key in values or any(key in t for t in texts)):
            return True
        return None if self.unknown else False


def received(evidence: Evidence) -> Received:
    """The values the trial's responses (and its task text) carried."""
    bodies = [e.response_body for e in evidence.exchanges if e.status is not None]  # has_response
    unknown = UNKNOWN in bodies  # no body equals the marker but the marker itself
    if unknown:
        bodies = [body for body in bodies if body is not UNKNOWN]
    return Received(bodies, evidence.task_text, unknown)


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
