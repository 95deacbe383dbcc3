"""A grid's question: what its adaptive sweep must settle (docs/design/051); ``cluster.waves`` runs it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from apiflow.analysis.adaptive import parse_question


class GridQuestion(BaseModel):
    """With a question, the grid runs its (task, epoch) units in one seeded random order, in waves,
    and stops when the answer is known. Neither the grid's id nor its trials' ids depend on it (the
    same trials, chosen adaptively).

    Attributes:
        ask: ``rank:K`` (every model's rank to +-K places), ``better:A,B[,margin]`` (is A's pass rate
            above B's by more than ``margin``; A and B are models of the grid, by id or slug) or
            ``width:W`` (every pass rate to +-W, a fraction).
        level: The confidence the answer holds at (jointly over its statements, unless ``joint`` is false).
        step: Each wave adds this fraction of the plan's units to every model still open.
        joint: False: each statement (a pair, a rate) at ``level`` on its own.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    ask: str
    level: float = Field(default=0.90, gt=0, lt=1)
    step: float = Field(default=0.05, gt=0, le=1)
    joint: bool = True

    @model_validator(mode="after")
    def _parses(self) -> GridQuestion:
        try:
            parse_question(self.ask, self.level, self.joint)
        except ValueError as exc:
            forms = "" if "rank:K" in str(exc) else " (the forms: rank:K, better:A,B[,margin], width:W)"
            raise ValueError(f"{self.ask!r}: {exc}{forms}") from None
        return self

    def check_models(self, models: Sequence[Any]) -> None:
        """Refuse a ``better`` question naming a model the grid lacks (``models``: its ``GridModel``s)."""
        asked = parse_question(self.ask)
        for name in asked.pair if asked.kind == "better" else ():
            if not any(name in (m.model, m.slug) for m in models):
                slugs = ", ".join(m.slug for m in models)
                raise ValueError(f"question {self.ask!r}: the grid has no model {name} (its models: {slugs})")


def short_form(data: Any) -> Any:
    """A grid's ``question: "rank:1"`` as ``{ask: "rank:1"}`` (the spec's data before validation)."""
    if isinstance(data, dict) and isinstance(data.get("question"), str):
        return {**data, "question": {"ask": data["question"]}}
    return data
