"""What the chaos suite counts and prints: one figures line per phase, one check per property, and
the per-trial outcome two runs are compared by (``bench/chaos.py``)."""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any


@dataclass
class Figures:
    """One line of the table."""

    scenario: str
    time_s: float = 0.0
    trials: int = 0
    injected: int = 0
    recorded: int | None = None
    retried: int | None = None
    lost: int | None = None
    duplicates: int | None = None
    spend: float | None = None
    cap: float | None = None
    note: str = ""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def table(figures: list[Figures], checks: list[Check]) -> list[str]:
    """The suite's figures as a Markdown table, then one line per check."""
    head = (
        "scenario",
        "time s",
        "trials",
        "faults inj",
        "recorded",
        "retried",
        "lost",
        "dups",
        "spend $",
        "cap $",
    )
    lines = ["| " + " | ".join(head) + " | note |", "|" + "---|" * (len(head) + 1)]
    for f in figures:
        cells = [f.scenario, f"{f.time_s:.1f}", str(f.trials), str(f.injected), _opt(f.recorded),
                 _opt(f.retried), _opt(f.lost), _opt(f.duplicates),
                 "" if f.spend is None else f"{f.spend:.4f}", "" if f.cap is None else f"{f.cap:.4f}", f.note]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"[{'PASS' if c.ok else 'FAIL'}] {c.name}: {c.detail}" for c in checks]
    return lines


def _opt(value: int | None) -> str:
    return "" if value is None else str(value)


def result(row: dict[str, Any]) -> tuple[Any, ...]:
    """What a trial's outcome is, wall time aside: equal between the clean and the chaotic run."""
    return (
        row["model"],
        row["passed"],
        row["verdict"],
        row["tokens_total"],
        row["n_messages"],
        row["model_calls"],
    )


def passes(counts: collections.Counter[tuple[Any, Any]]) -> dict[str, int]:
    return {model: n for (model, passed), n in sorted(counts.items()) if passed}


def zero() -> dict[str, int]:
    return collections.defaultdict(int)  # type: ignore[return-value]


def recorded(rows: list[dict[str, Any]], failures: list[dict[str, Any]]) -> int:
    """Faults on record: every retry logged in a row or a failure row, plus the fault that ended each failure."""
    return sum(r["retries"] for r in rows + failures) + len(failures)
