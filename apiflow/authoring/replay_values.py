"""How guessable are the values a replaying agent would copy? Measured over oracle trials.

Classes of value a replaying agent could copy from one trial into another: the **refs** the
workspace mints per trial (``request:req-…/response:resp-…``, drawn from a sha256-derived seed
of (run seed, task, epoch)); the **bearer tokens** the worlds mint and the **card canaries**
(both salted per trial, ``apiflow.world.canaries``); and the **fixed card values** (a value the
task itself gives, or a plain word such as a status). For each class this counts, over E oracle trials of
every task: values seen, distinct values, values shared by two different trials (a replay
that would line up), and the bits that tell trials apart (log2 of the distinct values per
task, averaged; 0 means every trial of a task shows the same value). The figures:
docs/results/011-grader-exploit-audit-measurements.md.
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from apiflow.agent.trial import trial_evidence
from apiflow.bank.loader import Bank
from apiflow.bank.task import Task
from apiflow.grading.predicates import leaves
from apiflow.models.offline import oracle_model
from apiflow.world.canaries import SEPARATOR, SUFFIX_CHARS

_TOKEN_KEYS = ("access_token", "token")
_SUFFIX_BITS = int(SUFFIX_CHARS * math.log2(36))
NOMINAL_BITS: dict[str, int | None] = {
    "refs": 24 + 32,  # ``req-`` 6 hex + ``resp-`` 8 hex digits
    "tokens": _SUFFIX_BITS,  # the per-trial suffix (apiflow.world.canaries)
    "canaries": _SUFFIX_BITS,
    "fixed-card": None,  # card values the task gives or that are not distinctive: the same every trial
}
"""Size of the space each class is drawn from (``None``: fixed by the bank)."""


@dataclass(frozen=True, slots=True)
class ValueClass:
    """Figures for one class of replayable value.

    Attributes:
        name: ``refs``, ``tokens`` or ``canaries``.
        seen: Values observed (one per trial and occurrence).
        distinct: Distinct values over all trials.
        shared: Distinct values seen in two or more different trials of the same task.
        bits_between_trials: Mean over tasks of log2(distinct values / values per trial): 0 when
            every trial of a task shows the same values, log2(E) when no two of E trials share one.
        nominal_bits: Size of the space a value is drawn from (``None``: fixed by the bank).
    """

    name: str
    seen: int
    distinct: int
    shared: int
    bits_between_trials: float
    nominal_bits: int | None

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "class": self.name,
            "seen": self.seen,
            "distinct": self.distinct,
            "shared_between_trials": self.shared,
            "bits_between_trials": round(self.bits_between_trials, 2),
            "nominal_bits": self.nominal_bits,
        }


def _values(task: Task, evidence: Any) -> dict[str, list[str]]:
    refs = [e.response_ref for e in evidence.exchanges if e.response_ref]
    tokens = []
    for e in evidence.exchanges:
        body = e.response_body
        if isinstance(body, dict):
            tokens += [str(body[k]) for k in _TOKEN_KEYS if isinstance(body.get(k), str)]
    wanted = {str(v) for p in task.answer_fields if p.comparator == "string" for v in [p.expected]}
    carried = sorted({str(leaf) for e in evidence.exchanges for leaf in leaves(e.response_body)} & wanted)
    return {
        "refs": refs,
        "tokens": tokens,
        "canaries": [v for v in carried if SEPARATOR in v],
        "fixed-card": [v for v in carried if SEPARATOR not in v],
    }


def measure(bank: Bank, tasks: Sequence[Task], epochs: int, seed: int = 0) -> list[ValueClass]:
    """Run the oracle ``epochs`` times on each task and measure each value class."""
    loop = asyncio.new_event_loop()
    per_task: dict[str, dict[str, list[set[str]]]] = defaultdict(lambda: defaultdict(list))
    try:
        for task in tasks:
            world = bank.worlds[task.world]
            for epoch in range(1, epochs + 1):
                coro = trial_evidence(task, world, oracle_model(task), seed=seed, epoch=epoch)
                played = loop.run_until_complete(coro)
                for name, values in _values(played.task, played.evidence).items():
                    per_task[name][task.id].append(set(values))
    finally:
        loop.close()
    return [_figures(name, per_task[name], NOMINAL_BITS[name]) for name in NOMINAL_BITS]


def _figures(name: str, trials_by_task: dict[str, list[set[str]]], nominal: int | None) -> ValueClass:
    seen = distinct = shared = 0
    bits: list[float] = []
    everything: set[str] = set()
    for trials in trials_by_task.values():
        counts: dict[str, int] = defaultdict(int)
        for values in trials:
            seen += len(values)
            for value in values:
                counts[value] += 1
        everything |= set(counts)
        shared += sum(1 for n in counts.values() if n > 1)
        per_trial = max((len(v) for v in trials), default=0)
        if per_trial:
            bits.append(math.log2(len(counts) / per_trial))
    distinct = len(everything)
    mean_bits = sum(bits) / len(bits) if bits else 0.0
    return ValueClass(name, seen, distinct, shared, mean_bits, nominal)
