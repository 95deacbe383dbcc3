"""Golden-solution surgery shared by the adversaries: steps with their ref slots, URL rewrites.

An adversary is the oracle's script with some of the labour cut out or corrupted. The
pieces here keep the one invariant that makes a cut script still run: every ``execute``
keeps the ref slot (``{{ref:N}}``) it has in the golden solution, so later calls that name
a skipped step's response get the "not found" ref the oracle uses for a skipped step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from apiflow.bank.task import GoldenCall, GoldenStep, Task
from apiflow.models.offline import PlannedCall, Turn

Rewrite = Callable[[dict[str, Any]], dict[str, Any] | None]
"""Maps an inline request to the request sent instead (``None``: drop the call)."""

_VERSION = re.compile(r"^(/*)v(\d+)/")
ID_SHAPE = re.compile(
    r"\b([a-z]{2,6})-([0-9a-f]{4}-[0-9a-f]{3,4}|[0-9a-f]{6}-\d{3}|legacy-\d{4}|[a-z]+-\d{2})\b"
)
"""Ids and canaries as the generator and the sample bank mint them (``smk-e36f-0db4``, ``smkgr-2c8a6c-736``)."""


@dataclass(frozen=True, slots=True)
class SlottedStep:
    """A golden step with the ref slot of each of its calls (``None`` for non-executes)."""

    index: int
    step: GoldenStep
    slots: tuple[int | None, ...]


def slotted(task: Task) -> list[SlottedStep]:
    """The task's golden steps, each call numbered by its golden execute index."""
    out, n = [], 0
    for index, step in enumerate(task.golden):
        slots: list[int | None] = []
        for call in step.calls:
            if call.name == "execute":
                slots.append(n)
                n += 1
            else:
                slots.append(None)
        out.append(SlottedStep(index, step, tuple(slots)))
    return out


def turn_of(step: SlottedStep, calls: Iterable[GoldenCall] | None = None) -> Turn:
    """One turn sending ``calls`` (default: the step's golden calls) with the step's ref slots.

    Replacement calls take the slots in order; extra executes get no slot.
    """
    chosen = list(step.step.calls if calls is None else calls)
    free = iter([s for s in step.slots if s is not None])
    planned = []
    for call in chosen:
        slot = next(free, None) if call.name == "execute" else None
        planned.append(PlannedCall(call, slot))
    return Turn(tuple(planned))


def request_of(call: GoldenCall) -> dict[str, Any] | None:
    """The inline request of an ``execute`` (``None`` for other tools and ``target`` sends)."""
    request = call.arguments.get("request") if call.name == "execute" else None
    return request if isinstance(request, dict) else None


def rewritten(call: GoldenCall, rewrite: Rewrite) -> GoldenCall | None:
    """``call`` with its inline request rewritten (other calls pass through unchanged)."""
    request = request_of(call)
    if request is None:
        return call
    new = rewrite(dict(request))
    if new is None:
        return None
    return GoldenCall(name=call.name, arguments={**call.arguments, "request": new})


def rewrite_turns(task: Task, rewrite: Rewrite) -> tuple[list[Turn], int]:
    """Every golden step with ``rewrite`` applied; returns the turns and how many requests of
    *essential* steps changed (a changed optional step leaves the labour done)."""
    turns, changed = [], 0
    for step in slotted(task):
        calls = []
        for call in step.step.calls:
            new = rewritten(call, rewrite)
            changed += new != call and step.step.essential
            if new is not None:
                calls.append(new)
        if calls:
            turns.append(turn_of(step, calls))
    return turns, changed


def version_of(url: str) -> int | None:
    """The API version a relative URL names (``/v3/...`` -> 3)."""
    match = _VERSION.match(url)
    return int(match.group(2)) if match else None


def with_version(url: str, version: int) -> str:
    """``url`` moved to another API version prefix."""
    return _VERSION.sub(lambda m: f"{m.group(1)}v{version}/", url, count=1)


def pattern_path(pattern: str) -> str:
    """A route path from a bank URL pattern (regex escapes and the ``(?:\\?|$)`` tail removed)."""
    text = pattern.replace("(?:\\?|$)", "")
    return "/" + re.sub(r"\\(.)", r"\1", text).lstrip("^/")


def replace_text(value: Any, old: str, new: str) -> Any:
    """``value`` with every occurrence of ``old`` in its strings replaced by ``new``."""
    return json.loads(json.dumps(value).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))
