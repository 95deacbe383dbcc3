"""The harness audit: every hostile adversary on every audited task, played as a grid plays it.

``apiflow/hostile:<name>`` attacks the harness rather than the grader (issue 26's classes that are
models: ``apiflow.models.adversarial.hostile``). Each plays epoch 1 of each task through
``apiflow.runner`` in a ``Run`` of its own whose replay is what ``replay_for`` gives a grid of it and the
oracle (on: the names are built-in), then an honest oracle trial of the same (task, epoch) in that
run. The harness held when, for every trial:

* ``scored``: the hostile trial ended as a model outcome (not ``provider_error``/``harness_error``,
  and nothing escaped the runner);
* ``fails``: it did not pass;
* ``others-unchanged``: the oracle after it passed with the record an oracle played alone in a fresh
  ``Run`` makes (wall-time fields aside);
* ``record-untouched``: ``FORGERY`` is nowhere in its record's messages but its own assistant turns,
  its first user message is the honest trial's, and a forger from the honest record (``poison``) does
  not record that transcript;
* ``clock``: a trial with a short clock ended within it (plus ``HOLD_GRACE_S``).

Any failed check is a harness exploit (docs/design/012-hostile-agents.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiflow.agent.ids import trial_seed
from apiflow.agent.loop import TrialLimits
from apiflow.agent.replay import replay_for
from apiflow.authoring.audit import sample_tasks
from apiflow.bank.loader import Bank
from apiflow.bank.task import Task
from apiflow.models.adversarial.hostile import (
    FORGERY,
    HOSTILE_PREFIX,
    HOSTILES,
    HostileExit,
    HostileInterrupt,
    hostile_model,
)
from apiflow.models.agent_thread import close_loop
from apiflow.models.base import ModelClient
from apiflow.results.record import WALL_TIME_FIELDS, Termination, TrialRecord
from apiflow.runner import Run, TrialPlan

ORACLE = "apiflow/oracle"
RUN_ID = "hostile-audit"
EPOCH = 1
CHECKS = ("scored", "fails", "others-unchanged", "record-untouched", "clock")
HOLD_GRACE_S = 1.5
"""How far past its clock a trial may end before it counts as held (a loaded machine's slack)."""
UNSCORED = (Termination.PROVIDER_ERROR, Termination.HARNESS_ERROR)
ESCAPES = (Exception, HostileInterrupt, HostileExit)
"""What a hostile trial may raise out of the runner: its own BaseExceptions, never a real Ctrl-C."""


@dataclass
class HostileRow:
    """One adversary's trials: how many, scored, passed, checks failed; or why it was not run."""

    name: str
    harm: int
    trials: int = 0
    scored: int = 0
    passed: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    not_run: str | None = None


@dataclass
class HostileReport:
    """The harness section of ``apiflow bank audit``.

    Attributes:
        bank: Bank name.
        tasks: Task ids audited, in order.
        seed: The base seed.
        rows: One per adversary, in ``HOSTILES`` order.
        exploits: Every failed check: adversary, task, check, detail.
        seconds: Wall time of the section.
    """

    bank: str
    tasks: list[str]
    seed: int
    rows: dict[str, HostileRow] = field(default_factory=dict)
    exploits: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def sound(self) -> bool:
        """True when every check held on every trial played."""
        return not self.exploits

    def fail(self, name: str, task: Task, check: str, detail: str) -> None:
        self.rows[name].failed[check] += 1
        self.exploits.append({"adversary": name, "task": task.id, "check": check, "detail": detail})


def comparable(record: TrialRecord) -> dict[str, Any]:
    """A record's JSON without its wall-time fields: equal for two plays of the same trial."""
    data = json.loads(record.to_json())
    for dotted in WALL_TIME_FIELDS:
        *parents, leaf = dotted.split(".")
        holder = data
        for key in parents:
            holder = holder[key]
        holder.pop(leaf, None)
    return data


def missing_extra(extra: str | None) -> str | None:
    """Why an adversary cannot be played here (its optional dependency is not installed), or None."""
    if extra is None or importlib.util.find_spec(extra) is not None:
        return None
    return f"not run: needs the {extra} extra (pip install 'apiflow[{extra}]')"


class _Section:
    """Plays the section's trials on one private event loop, and the honest reference of each task."""

    def __init__(self, bank: Bank, seed: int) -> None:
        self.bank, self.seed = bank, seed
        self.loop = asyncio.new_event_loop()
        self.alone: dict[str, TrialRecord] = {}

    def play(
        self, run: Run, plan: TrialPlan, build: Callable[[TrialPlan], ModelClient] | None = None
    ) -> TrialRecord:
        async def records() -> list[TrialRecord]:
            return [record async for record in run.play([plan], build)]

        (record,) = self.loop.run_until_complete(records())
        return record

    def reference(self, task: Task) -> TrialRecord:
        """The oracle's record of (task, epoch 1) played alone in a fresh run, without replay."""
        if task.id not in self.alone:
            self.alone[task.id] = self.play(Run(self.bank, RUN_ID, self.seed), TrialPlan(ORACLE, task, EPOCH))
        return self.alone[task.id]

    def close(self) -> None:
        close_loop(self.loop)


def audit_hostile(
    bank: Bank,
    *,
    sample: int | None = None,
    seed: int = 0,
    adversaries: Sequence[str] | None = None,
    task_ids: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> HostileReport:
    """Play every hostile adversary on every (sampled) task, epoch 1, and check the harness held.

    Args:
        bank: The bank.
        sample: Audit only this many tasks (``sample_tasks``, as the grader section); all when None.
        seed: The base seed.
        adversaries: Names to run (default: all of ``HOSTILES``).
        task_ids: Audit exactly these tasks (overrides ``sample``).
        progress: Called with one line per adversary.
    """
    tasks = [bank.task(t) for t in task_ids] if task_ids else sample_tasks(bank, sample)
    report = HostileReport(bank.name, [t.id for t in tasks], seed)
    section = _Section(bank, seed)
    started = time.perf_counter()
    try:
        for name in adversaries or HOSTILES:
            hostile = HOSTILES[name]
            row = report.rows[name] = HostileRow(name, hostile.harm, not_run=missing_extra(hostile.extra))
            if row.not_run is None:
                _audit_adversary(section, report, name, tasks)
            if progress:
                progress(f"{name:<16} {sum(row.failed.values())} check(s) failed")
    finally:
        section.close()
    report.seconds = time.perf_counter() - started
    return report


def _audit_adversary(section: _Section, report: HostileReport, name: str, tasks: list[Task]) -> None:
    hostile, model = HOSTILES[name], HOSTILE_PREFIX + name
    limits = TrialLimits(max_seconds=hostile.max_seconds) if hostile.max_seconds else None
    # As one grid worker plays a grid of this adversary and the oracle: one run, one replay.
    run = Run(section.bank, RUN_ID, section.seed, limits=limits, replay=replay_for([model, ORACLE]))
    honest_run = dataclasses.replace(run, limits=None)  # the same run (its replay), the default clock
    row = report.rows[name]
    for task in tasks:
        alone = section.reference(task)
        build = _recorded(name, trial_seed(section.seed, task.id, EPOCH), alone) if hostile.recorded else None
        row.trials += 1
        began = time.perf_counter()
        try:
            record: TrialRecord | None = section.play(run, TrialPlan(model, task, EPOCH), build)
        except ESCAPES as exc:
            report.fail(name, task, "scored", f"{type(exc).__name__} escaped the runner")
            record = None
        held = time.perf_counter() - began
        if record is not None:
            _check_trial(report, name, task, record, alone)
        if hostile.max_seconds is not None and held > hostile.max_seconds + HOLD_GRACE_S:
            report.fail(
                name, task, "clock", f"held the trial {held:.1f} s (max_seconds={hostile.max_seconds:g})"
            )
        try:
            after = section.play(honest_run, TrialPlan(ORACLE, task, EPOCH))
        except ESCAPES as exc:
            report.fail(name, task, "others-unchanged", f"the oracle after it raised {type(exc).__name__}")
            continue
        if after.passed is not True:
            report.fail(
                name, task, "others-unchanged", f"the oracle after it did not pass ({after.verdict!r})"
            )
        elif comparable(after) != comparable(alone):
            report.fail(name, task, "others-unchanged", "the oracle after it recorded another record")


def _recorded(name: str, seed: int, alone: TrialRecord) -> Callable[[TrialPlan], ModelClient]:
    """Builds an adversary that forges from the honest record of its trial (``Hostile.recorded``)."""
    return lambda plan: hostile_model(name, plan.task, seed, recorded=alone.messages)


def _check_trial(
    report: HostileReport, name: str, task: Task, record: TrialRecord, alone: TrialRecord
) -> None:
    row = report.rows[name]
    termination = record.apiflow.termination
    if termination in UNSCORED:
        report.fail(name, task, "scored", f"ended as {termination.value}")
    else:
        row.scored += 1
    if record.passed:
        row.passed += 1
        report.fail(name, task, "fails", "the hostile trial passed")
    forged = _forgery(record, alone, recorded=HOSTILES[name].recorded)
    if forged is not None:
        report.fail(name, task, "record-untouched", forged)


def _forgery(record: TrialRecord, alone: TrialRecord, *, recorded: bool) -> str | None:
    """What of a forgery reached the record, or None. An adversary that forges from the honest record
    (``recorded``) sent other arguments than the honest trial, so its record is never that one."""
    if recorded and record.messages == alone.messages:
        return "its record is the honest transcript it forged"
    for message in record.messages:
        role = message.get("role")
        if role != "assistant" and FORGERY in json.dumps(message, ensure_ascii=False):
            return f"{FORGERY} in a {role} message"
    first = [m for m in record.messages if m.get("role") == "user"][:1]
    if first != [m for m in alone.messages if m.get("role") == "user"][:1]:
        return "its first user message is not the honest trial's"
    return None


def render_hostile(report: HostileReport) -> list[str]:
    """The section's table: one line per adversary (class, trials, scored, passed, checks failed)."""
    head = f"{'hostile':<16} {'class':>5} {'trials':>7} {'scored':>7} {'passed':>7}  checks failed"
    lines = [head, "-" * len(head)]
    for row in report.rows.values():
        if row.not_run is not None:
            lines.append(f"{row.name:<16} {row.harm:>5}  {row.not_run}")
            continue
        failed = ", ".join(f"{c} {row.failed[c]}" for c in CHECKS if row.failed[c]) or "-"
        lines.append(
            f"{row.name:<16} {row.harm:>5} {row.trials:>7} {row.scored:>7} {row.passed:>7}  {failed}"
        )
    return lines
