"""The grader-exploit audit: every adversary on every task, graded as real trials are.

A task is sound only if no ``apiflow/adv:<name>`` passes it: each adversary leaves some of
the task's labour undone by construction (docs/design/011-grader-exploit-audit.md defines
the labour per family). Trials are played by the agent loop in a fresh world exactly like
``run_trial`` (``trial_evidence``); the same evidence is then graded under the judged rule
set and, for information, under ``published-1.0`` (what the published grader lets through).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiflow.agent.ids import trial_seed
from apiflow.agent.replay import Replay
from apiflow.agent.trial import GRADING_RULES, PlayedTrial, trial_evidence
from apiflow.bank.loader import Bank
from apiflow.bank.task import Task
from apiflow.grading import grade
from apiflow.grading.rules import PUBLISHED, rule_set
from apiflow.models.adversarial import ADVERSARIES, adversary_model, adversary_plan
from apiflow.models.offline import ScriptedModel, oracle_model

REFERENCE_RULES = PUBLISHED.name
"""Graded beside the judged rules, for information only: the published looseness."""

Cell = tuple[str, str, str]
"""(adversary, world, axis)."""

GROUNDS = ("G1", "G2", "abstained")


@dataclass
class AuditReport:
    """Pass counts per adversary × world × axis, under the judged and the reference rules.

    Attributes:
        bank: Bank name.
        bank_hash: Bank sha256.
        rules: The judged rule set (the exit code's).
        reference: The rule set graded for information (``published-1.0``).
        tasks: Task ids audited, in order.
        epochs: Trials per (adversary, task).
        seed: The base seed.
        sample: The requested sample size (``None``: every task).
        trials: Trials run per cell.
        passes: Passing trials per (rules name, cell).
        not_applicable: (adversary, task) pairs the task offers nothing to cheat with.
        refused: Trials per (rules, adversary, ground) where that ground failed: ``G1`` (state),
            ``G2`` (answer card), ``abstained`` (a trial may be refused on several grounds).
        exploits: Every passing trial: rules, adversary, task id, epoch.
        seconds: Wall time of the audit.
    """

    bank: str
    bank_hash: str
    rules: str
    reference: str
    tasks: list[str]
    epochs: int
    seed: int = 0
    sample: int | None = None
    trials: Counter[Cell] = field(default_factory=Counter)
    passes: Counter[tuple[str, Cell]] = field(default_factory=Counter)
    not_applicable: int = 0
    refused: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    exploits: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def passing(self, rules: str | None = None, *, informational: bool = False) -> list[dict[str, Any]]:
        """Passing trials of judged adversaries under ``rules`` (default: the judged rule set);
        ``informational=True`` lists the passes of the informational probes instead."""
        name = rules or self.rules
        return [
            e
            for e in self.exploits
            if e["rules"] == name and ADVERSARIES[e["adversary"]].judged != informational
        ]

    def _ran(self, adversary: str) -> bool:
        return any(n for (a, _, _), n in self.trials.items() if a == adversary)

    @property
    def sound(self) -> bool:
        """True when no adversary passed any task under the judged rules."""
        return not self.passing()

    def as_dict(self) -> dict[str, Any]:
        """JSON form (``--json`` and the record committed beside each bank)."""
        rows = [
            {
                "adversary": adv,
                "family": ADVERSARIES[adv].family,
                "judged": ADVERSARIES[adv].judged,
                "world": world,
                "axis": axis,
                "trials": n,
                "passes": {r: self.passes[(r, (adv, world, axis))] for r in (self.rules, self.reference)},
            }
            for (adv, world, axis), n in sorted(self.trials.items(), key=_cell_order)
        ]
        return {
            "bank": self.bank,
            "bank_hash": self.bank_hash,
            "rules": self.rules,
            "reference": self.reference,
            "tasks": len(self.tasks),
            "task_ids_sha256": hashlib.sha256("\n".join(self.tasks).encode()).hexdigest(),
            "epochs": self.epochs,
            "seed": self.seed,
            "sample": self.sample,
            "trials": sum(self.trials.values()),
            "not_applicable": self.not_applicable,
            "passes": {r: len(self.passing(r)) for r in (self.rules, self.reference)},
            "informational_passes": {
                r: len(self.passing(r, informational=True)) for r in (self.rules, self.reference)
            },
            "sound": self.sound,
            "refused": {
                r: {a: {g: self.refused[(r, a, g)] for g in GROUNDS} for a in ADVERSARIES if self._ran(a)}
                for r in (self.rules, self.reference)
            },
            "rows": rows,
            "exploits": self.exploits,
        }


def _cell_order(item: tuple[Cell, int]) -> tuple[int, str, str]:
    (adv, world, axis), _ = item
    return list(ADVERSARIES).index(adv), world, axis


def sample_tasks(bank: Bank, n: int | None) -> list[Task]:
    """All tasks, or ``n`` of them chosen by sha256 of their ids (deterministic, spread over worlds)."""
    tasks = sorted(bank.tasks.values(), key=lambda t: t.id)
    if n is None or n >= len(tasks):
        return tasks
    ranked = sorted(tasks, key=lambda t: hashlib.sha256(f"audit|{t.id}".encode()).hexdigest())
    chosen = {t.id for t in ranked[:n]}
    return [t for t in tasks if t.id in chosen]


class _Player:
    """Plays trials on one private event loop (the audit runs thousands of tiny trials)."""

    def __init__(self, bank: Bank, seed: int) -> None:
        self.bank, self.seed = bank, seed
        self.loop = asyncio.new_event_loop()
        self.replay = Replay()  # every model an audit plays is a built-in scripted one

    def play(self, task: Task, model: ScriptedModel, epoch: int) -> PlayedTrial:
        world = self.bank.worlds[task.world]
        played = trial_evidence(task, world, model, seed=self.seed, epoch=epoch, replay=self.replay)
        return self.loop.run_until_complete(played)

    def recording(self, task: Task) -> tuple[dict[int, str], dict[str, str]]:
        """What a transcript of an oracle trial of epoch 1 shows: its response refs (by golden
        execute index) and its per-trial forms of the bank values."""
        model = oracle_model(task)
        self.play(task, model, 1)
        return dict(model._refs), model.learned_values()  # noqa: SLF001 - the transcript's refs

    def close(self) -> None:
        self.loop.close()


def audit_bank(
    bank: Bank,
    *,
    sample: int | None = None,
    epochs: int = 1,
    seed: int = 0,
    rules: str = GRADING_RULES,
    adversaries: Sequence[str] | None = None,
    task_ids: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> AuditReport:
    """Run every adversary on every (sampled) task for ``epochs`` epochs and count the passes.

    ``epoch-replay`` replays into epoch ``e + 1`` the refs and per-trial values an oracle trial of
    epoch 1 showed (its "epoch 1" is the recording, so it never plays epoch 1 itself).

    Args:
        bank: The bank.
        sample: Audit only this many tasks (``sample_tasks``); all when ``None``.
        epochs: Trials per (adversary, task), epochs 1..E (trial seeds differ per epoch).
        seed: The base seed, as for ``apiflow run``.
        rules: The judged rule set (default: the one live trials are graded with).
        adversaries: Names to run (default: all of ``ADVERSARIES``).
        task_ids: Audit exactly these tasks (overrides ``sample``).
        progress: Called with one line per adversary.

    Raises:
        UsageError: Unknown rule set.
    """
    judged = rule_set(rules)
    names = list(adversaries or ADVERSARIES)
    tasks = [bank.task(t) for t in task_ids] if task_ids else sample_tasks(bank, sample)
    report = AuditReport(
        bank.name, bank.hash, judged.name, REFERENCE_RULES, [t.id for t in tasks], epochs, seed, sample
    )
    player = _Player(bank, seed)
    started = time.perf_counter()
    try:
        for name in names:
            for task in tasks:
                _audit_task(player, report, name, task)
            if progress:
                passed = sum(1 for e in report.passing() if e["adversary"] == name)
                progress(f"{name:<16} {passed} passing under {judged.name}")
    finally:
        player.close()
    report.seconds = time.perf_counter() - started
    return report


def _audit_task(player: _Player, report: AuditReport, name: str, task: Task) -> None:
    recorded = player.recording(task) if name == "epoch-replay" else None
    cell = (name, task.world, task.axis or task.kind)
    for epoch in range(1, report.epochs + 1):
        play_epoch = epoch + 1 if recorded is not None else epoch
        tseed = trial_seed(player.seed, task.id, play_epoch)
        if adversary_plan(name, task, tseed) is None:
            report.not_applicable += 1
            continue
        refs, values = recorded or ({}, {})
        model = adversary_model(name, task, tseed, refs, values)
        played = player.play(task, model, play_epoch)
        spec = played.task  # the grading spec in this trial's per-trial canary forms
        report.trials[cell] += 1
        for rules in dict.fromkeys((report.rules, report.reference)):
            graded = grade(spec.predicates, spec.checkpoints, spec.constraints, played.evidence, rules=rules)
            for ground, failed in zip(
                GROUNDS,
                (not graded.g1_passed, not graded.g2_passed, graded.abstained is not None),
                strict=True,
            ):
                report.refused[(rules, name, ground)] += failed
            if graded.passed:
                report.passes[(rules, cell)] += 1
                report.exploits.append(
                    {"rules": rules, "adversary": name, "task": task.id, "epoch": play_epoch}
                )


def render_table(report: AuditReport) -> list[str]:
    """The audit table: one line per adversary × world, one ``passes/trials`` column per axis.

    Each cell shows judged-rule passes, then the published-1.0 passes in brackets when they differ;
    an informational probe (never fails the audit) is marked ``*``.
    """
    axes = sorted({axis for _, _, axis in report.trials})
    worlds = sorted({world for _, world, _ in report.trials})
    head = f"{'exploit':<16} {'world':<5} " + " ".join(f"{a[:12]:>12}" for a in axes) + f" {'total':>12}"
    lines = [head, "-" * len(head)]
    for name in ADVERSARIES:
        for world in worlds:
            cells = [(name, world, axis) for axis in axes]
            if not any(report.trials[c] for c in cells):
                continue
            row = [_cell_text(report, [c]) for c in cells]
            label = name if ADVERSARIES[name].judged else f"{name}*"
            lines.append(
                f"{label:<16} {world:<5} "
                + " ".join(f"{r:>12}" for r in row)
                + f" {_cell_text(report, cells):>12}"
            )
    return lines


def render_grounds(report: AuditReport) -> list[str]:
    """What refused each adversary under the judged rules (and published-1.0): trials failing each ground."""
    head = f"{'exploit':<16} {'trials':>7}  " + "  ".join(f"{g:>15}" for g in GROUNDS)
    lines = [head, "-" * len(head)]
    for name in ADVERSARIES:
        trials = sum(n for (a, _, _), n in report.trials.items() if a == name)
        if not trials:
            continue
        cells = []
        for ground in GROUNDS:
            judged, ref = (
                report.refused[(report.rules, name, ground)],
                report.refused[(report.reference, name, ground)],
            )
            cells.append(f"{judged}" + (f" [{ref}]" if ref != judged else ""))
        lines.append(f"{name:<16} {trials:>7}  " + "  ".join(f"{c:>15}" for c in cells))
    return lines


def _cell_text(report: AuditReport, cells: list[Cell]) -> str:
    trials = sum(report.trials[c] for c in cells)
    if not trials:
        return "-"
    judged = sum(report.passes[(report.rules, c)] for c in cells)
    reference = sum(report.passes[(report.reference, c)] for c in cells)
    extra = f"[{reference}]" if reference != judged else ""
    return f"{judged}{extra}/{trials}"


def record_text(record: dict[str, Any]) -> str:
    """The audit record as committed beside a bank: summary keys indented, one JSON line per row.

    Stable bytes (no timings): the same bank, sample, epochs and seed give the same file.
    """
    lines = ["{"]
    items = list(record.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if key in ("rows", "exploits") and value:
            body = ",\n".join("  " + json.dumps(v, sort_keys=True) for v in value)
            lines.append(f" {json.dumps(key)}: [\n{body}\n ]{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"
