"""Diagnostics that explain a grade but never change it: checkpoints, constraints, segments.

Checkpoints (requests a correct run makes) and constraints (``forbid`` a route,
``require`` a header) are evaluated from their specs over the evidence and reported in
the verifier payload; the verdict ignores them (REFERENCE §5.3). Segment diagnostics
aggregate the segment-tagged predicates of a chain (REFERENCE §5.4).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from apiflow.grading.evidence import Evidence, Exchange
from apiflow.grading.predicates import url_regex
from apiflow.grading.refs import loads_maybe
from apiflow.grading.spec import CheckpointSpec, ConstraintSpec


def _matching(exchanges: Iterable[Exchange], pattern: str, method: str | None) -> list[Exchange]:
    """The exchanges sent to a route, in order: ``method`` (any when None, else compared upper-cased)
    and a URL that ``pattern`` searches; the pattern is looked up and the method cased once.

    A plain loop, not a generator: every checkpoint and constraint walks every exchange of
    every trial, and few of them match.
    """
    regex = url_regex(pattern)
    # ``needle`` is text every match contains: testing it first spares the call for the many URLs
    # that cannot match; ``search`` itself starts with the same test.
    needle = regex.needle
    wanted = None if method is None else method.upper()
    found: list[Exchange] = []
    for e in exchanges:
        if (wanted is None or e.method == wanted) and needle in e.url and regex.search(e.url):
            found.append(e)
    return found


def _body_contains(body: Any, wanted: dict[str, object]) -> bool:
    body = loads_maybe(body)
    return isinstance(body, dict) and all(k in body and body[k] == v for k, v in wanted.items())


def checkpoint(spec: CheckpointSpec, evidence: Evidence) -> dict[str, Any]:
    """One checkpoint in the published shape: hit when some request of the trial matches it."""
    hit = False
    for e in _matching(evidence.exchanges, spec.url_pattern, spec.method):
        if (spec.status is None or e.status == spec.status) and (
            not spec.body_contains or _body_contains(e.body, spec.body_contains)
        ):
            hit = True
            break
    return {"id": spec.id, "desc": None, "hit": hit, "applicable": True, "explain": spec.explain}


def _has_header(exchange: Exchange, name: str) -> bool:
    headers = loads_maybe(exchange.headers)
    if not isinstance(headers, dict):
        return False
    wanted = name.lower()
    return any(str(k).lower() == wanted and v not in (None, "") for k, v in headers.items())


def constraint(spec: ConstraintSpec, evidence: Evidence) -> dict[str, Any]:
    """One constraint in the published shape.

    ``forbid``: violated when a matching request was sent. ``require``: applicable when a
    matching request was sent, violated when one of them lacks ``spec.header``.
    """
    matching = _matching(evidence.exchanges, spec.url_pattern, spec.method)
    applicable, detail = True, ""
    if spec.kind == "forbid":
        if matching:
            detail = f"forbidden url called: {matching[0].url}"
    elif spec.header is None or not matching:
        applicable = False
    else:
        missing = [e for e in matching if not _has_header(e, spec.header)]
        if missing:
            detail = f"required header {spec.header!r} missing on {missing[0].url}"
    return {
        "id": spec.id,
        "desc": None,
        "kind": spec.kind,
        "violated": bool(detail),
        "applicable": applicable,
        "detail": detail,
        "explain": spec.explain,
    }


class Tagged(NamedTuple):
    """What segment diagnostics need to know about one predicate."""

    segment: int | None
    group: str
    passed: bool


class _Graded(Protocol):
    """A ``Tagged`` or a graded predicate (``verdict.PredicateResult``: ``passed`` may be ``None``)."""

    @property
    def segment(self) -> int | None: ...  # noqa: D102

    @property
    def group(self) -> str: ...  # noqa: D102

    @property
    def passed(self) -> bool | None: ...  # noqa: D102


def segment_diagnostics(results: Sequence[_Graded]) -> dict[str, Any]:
    """``per_segment`` over tagged predicates, ``failure_stage``/``symptom_stage``, ``tagged_segments``.

    ``failure_stage`` is the smallest segment whose G1 predicates failed (an earlier step's
    state never landed); ``symptom_stage`` the smallest whose G2 answer failed. Only ``passed is
    True`` counts as passed (an unsettled predicate did not pass). One pass tallies every segment.
    """
    tally: dict[int, list[Any]] = {}  # segment -> [passed, total, G1 all passed, G2 all passed]
    for r in results:
        segment = r.segment
        if segment is None:
            continue
        counts = tally.get(segment)
        if counts is None:
            counts = tally[segment] = [0, 0, True, True]
        counts[1] += 1
        if r.passed is True:
            counts[0] += 1
        elif r.group == "G1":
            counts[2] = False
        elif r.group == "G2":
            counts[3] = False
    per_segment: dict[str, Any] = {}
    failure_stage = symptom_stage = None
    for segment in sorted(tally):
        passed, total, g1, g2 = tally[segment]
        per_segment[str(segment)] = {
            "passed": passed,
            "total": total,
            "fraction": round(passed / total, 3),
            "g1_passed": g1,
            "g2_passed": g2,
        }
        if not g1 and failure_stage is None:
            failure_stage = segment
        if not g2 and symptom_stage is None:
            symptom_stage = segment
    return {
        "per_segment": per_segment,
        "failure_stage": failure_stage,
        "symptom_stage": symptom_stage,
        "tagged_segments": len(tally),
    }
