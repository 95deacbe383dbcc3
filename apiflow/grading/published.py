"""Reading a published verifier payload back as a grading spec (for regrading).

A published trial records its predicates with their parameters in ``detail``; those are
the task's grading spec. Checkpoints and constraints are recorded only with their
outcome (no route patterns), so a regrade cannot re-evaluate them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from apiflow.grading.answer import Generation
from apiflow.grading.spec import AnswerFieldSpec, DataFlowSpec, NewResponseSpec, WorkspaceValueSpec

Spec = AnswerFieldSpec | DataFlowSpec | NewResponseSpec | WorkspaceValueSpec

NEWER_GRADER_MARKER = "demoted_predicates"


class PublishedSpecError(ValueError):
    """A recorded predicate whose kind or parameters cannot be read."""


def _kind(entry: Mapping[str, Any]) -> str:
    key = entry.get("key") or ""
    label = entry.get("label") or ""
    for kind in ("answer_schema", "data_flow", "new_response", "workspace_values"):
        if key.startswith(kind) or label.startswith(kind):
            return kind
    if label.startswith("answer."):
        return "answer_schema"
    raise PublishedSpecError(f"unknown predicate kind: {label!r}")


_FIELDS: dict[str, tuple[type[Spec], tuple[str, ...]]] = {
    "answer_schema": (AnswerFieldSpec, ("field", "expected", "comparator")),
    "data_flow": (
        DataFlowSpec,
        (
            "from_response_url_pattern",
            "from_body_key",
            "from_status",
            "must_be_stored",
            "used_in_request_url_pattern",
        ),
    ),
    "new_response": (NewResponseSpec, ("url_pattern", "status", "method", "body_has_keys")),
    "workspace_values": (WorkspaceValueSpec, ("value",)),
}


SpecMemo = dict[tuple[Any, ...], Spec]
"""Specs already built, by exact key: a regrade owns one for the files it reads (``regrade_files``)."""


def spec_from_published(entry: Mapping[str, Any], memo: SpecMemo | None = None) -> Spec:
    """The predicate spec a published ``predicates[]`` entry was graded from.

    With ``memo``, a spec built before from equal values is handed back (every trial of a task
    repeats the same predicates, so a regrade validates each distinct one once).

    Raises:
        PublishedSpecError: Unknown kind or unreadable parameters.
    """
    kind = _kind(entry)
    model, names = _FIELDS[kind]
    detail = entry.get("detail") or {}
    values: dict[str, Any] = {n: detail[n] for n in names if n in detail and detail[n] is not None}
    if kind == "new_response":
        values.setdefault("url_pattern", detail.get("url_pattern") or "")
    values.update(
        explain=detail.get("explain") or "",
        prompt_quote=detail.get("prompt_quote") or "",
        segment=entry.get("segment", detail.get("segment")),
    )
    if memo is None:
        return _build(kind, values, str(entry.get("label")))
    key = _memo_key(kind, values)
    spec = memo.get(key)
    if spec is None:
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        spec = memo[key] = _build(kind, values, str(entry.get("label")))
    return spec


_MEMO_SIZE = 8192


def _memo_key(kind: str, values: dict[str, Any]) -> tuple[Any, ...]:
    """An exact key for ``values``: names in order, each string as itself, anything else as its repr.

    Equal keys mean equal specs: strings compare exactly, and a repr tells apart what equality does
    not (``1``, ``1.0`` and ``True``; ``0.0`` and ``-0.0``; NaN equals itself). A non-string value is
    wrapped in a 1-tuple, so it never meets a string. Hashing the strings as they are costs a third of
    the ``repr`` of the whole dict the key used to be (the ``explain`` texts are most of it).
    """
    key: list[Any] = [kind]
    for name, value in values.items():
        key.append(name)
        key.append(value if type(value) is str else (repr(value),))
    return tuple(key)


def _build(kind: str, values: dict[str, Any], label: str) -> Spec:
    model, _ = _FIELDS[kind]
    try:
        return model.model_validate(values)
    except ValidationError:
        # Recorded values outside our bank's types (e.g. a non-string list item): keep them as recorded.
        missing = [n for n, f in model.model_fields.items() if f.is_required() and n not in values]
        if missing:
            raise PublishedSpecError(f"predicate {label!r} lacks {missing}") from None
        return model.model_construct(**values)


def specs_from_verifier(verifier: Mapping[str, Any], memo: SpecMemo | None = None) -> list[Spec]:
    """Every recorded predicate of a verifier payload, as specs, in recorded order."""
    return [spec_from_published(p, memo) for p in verifier.get("metadata", {}).get("predicates") or ()]


def generation_of(verifier: Mapping[str, Any]) -> Generation:
    """``newer`` when the payload carries the newer grader's marker, else ``original``."""
    sub = verifier.get("metadata", {}).get("sub_predicates") or {}
    return "newer" if NEWER_GRADER_MARKER in sub else "original"
