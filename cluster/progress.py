"""Live progress of a grid: trials done/remaining, pass rate so far, spend, rate-limit waits.

A rich progress bar on a terminal; on a log (``ray job logs``, CI) one plain line every few
seconds instead, so logs stay readable.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


@dataclass
class Tally:
    """Running counts of this invocation."""

    done: int = 0
    stored: int = 0
    duplicates: int = 0
    passed: int = 0
    scored: int = 0
    harness: int = 0
    final: int = 0
    """Trials whose unscored outcome here was their last allowed one (``GridSpec.max_unscored_attempts``)."""
    retries: int = 0
    spent_usd: float = 0.0
    stored_usd: float = 0.0
    """Spend of the trials this invocation saw stored (rows or failure rows): the budget checkpoint's
    "already in a row" part."""
    requeued: int = 0
    gate_wait_s: float = 0.0
    rate_limited: int = 0
    gate_rpm: dict[str, float] = field(default_factory=dict)
    """Each provider gate's effective request rate (``cluster.ratelimit.Aimd``), when the driver reads it."""
    total: int = 0
    """Trials this invocation set out to run."""
    on_record_usd: float = 0.0
    """The grid's spend on record before this invocation (earlier attempts)."""
    ledger_usd: float | None = None
    """With a budget: the ledger's spend, every call billed so far (in-flight trials included)."""
    cap_usd: float | None = None
    began: float = field(default_factory=time.monotonic)
    note: str = ""
    """Said first on the live line (an adaptive sweep's wave and what is open)."""

    @property
    def grid_usd(self) -> float:
        """The grid's spend on record now: earlier attempts plus this one's (billed calls, with a ledger)."""
        return self.ledger_usd if self.ledger_usd is not None else self.on_record_usd + self.spent_usd

    def eta_s(self, now: float | None = None) -> float | None:
        """Seconds left at the observed pace: the trials left at this run's trial rate, or, with a cap,
        the money left at this run's spend rate, whichever ends first (None before a trial ends)."""
        elapsed = (now if now is not None else time.monotonic()) - self.began
        if not self.done or elapsed <= 0:
            return None
        left = max(self.total - self.done, 0) * elapsed / self.done
        spent_here = self.grid_usd - self.on_record_usd
        if self.cap_usd is not None and spent_here > 0:
            left = min(left, max(self.cap_usd - self.grid_usd, 0.0) * elapsed / spent_here)
        return left

    def describe(self) -> str:
        """One short status line: the grid's money and time, then this run's faults."""
        rate = f"{self.passed / self.scored:.1%}" if self.scored else "-"
        money = f"${self.grid_usd:.4f} on record" + (f" of ${self.cap_usd:.2f}" if self.cap_usd else "")
        eta = self.eta_s()
        clock = f"{_clock(time.monotonic() - self.began)} elapsed" + (f", ETA {_clock(eta)}" if eta is not None else "")
        return (
            (f"{self.note} · " if self.note else "")
            + f"pass {rate} · harness {self.harness}{f' ({self.final} final)' if self.final else ''} · {money} · {clock} · retries {self.retries}"
            f" · 429s {self.rate_limited} · gate wait {self.gate_wait_s:.1f}s"
            + "".join(f" · {provider} {rpm:.0f} rpm" for provider, rpm in sorted(self.gate_rpm.items()))
        )


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


class GridProgress:
    """Progress display over ``total`` trials; a context manager."""

    def __init__(self, total: int, enabled: bool = True, every_s: float = 5.0) -> None:
        self.total = total
        self.enabled = enabled
        self.every_s = every_s
        self.live = enabled and sys.stderr.isatty()
        self._last = 0.0
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> GridProgress:
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TimeRemainingColumn(), TextColumn("{task.description}"), console=Console(stderr=True),
            )  # fmt: skip
            self._progress.__enter__()
            self._task = self._progress.add_task("", total=self.total)
        return self

    def update(self, tally: Tally) -> None:
        """Show the latest counts (rate-limited for plain logs)."""
        total = tally.total or self.total  # a sweep's waves raise it as they go
        if self._progress is not None:
            self._progress.update(self._task, completed=tally.done, total=total, description=tally.describe())
            return
        now = time.monotonic()
        if self.enabled and (now - self._last >= self.every_s or tally.done == total):
            self._last = now
            print(f"[grid] {tally.done}/{total} · {tally.describe()}", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)
