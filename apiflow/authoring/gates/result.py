"""Gate results and the validation report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class GateResult:
    """One gate on one task: passed or not, with a one-line reason."""

    task_id: str
    gate: str
    ok: bool
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON form for the validation report."""
        return {"task": self.task_id, "gate": self.gate, "ok": self.ok, "detail": self.detail}


@dataclass(slots=True)
class GateLog:
    """Results in the order the gates ran."""

    results: list[GateResult] = field(default_factory=list)

    def add(self, task_id: str, gate: str, ok: bool, detail: str = "") -> bool:
        """Record one result; returns ``ok``."""
        self.results.append(GateResult(task_id, gate, ok, detail))
        return ok

    def failures(self) -> list[GateResult]:
        """The failed results."""
        return [r for r in self.results if not r.ok]

    def summary(self) -> dict[str, dict[str, int]]:
        """Per gate: how many passed and failed."""
        out: dict[str, dict[str, int]] = {}
        for r in self.results:
            row = out.setdefault(r.gate, {"passed": 0, "failed": 0})
            row["passed" if r.ok else "failed"] += 1
        return dict(sorted(out.items()))
