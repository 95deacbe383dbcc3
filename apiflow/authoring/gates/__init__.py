"""Validation gates: a task enters a bank only when its grader is load-bearing, it is solvable from
what the agent can discover, and (for chains) it really depends on its earlier steps.

``check_solo`` runs every subtask gate, ``check_chains`` every chain gate of one world, and
``verify_bank`` all of them over a loaded bank (what ``apiflow bank verify`` prints).
"""

from __future__ import annotations

import json
from typing import Any

from apiflow.authoring.gates import chains as chain_gates
from apiflow.authoring.gates.oracle import solvability
from apiflow.authoring.gates.result import GateLog, GateResult
from apiflow.authoring.gates.solo import triad
from apiflow.authoring.gates.static import discoverability, leak
from apiflow.bank.task import Task
from apiflow.world import WorldDef
from apiflow.world.spec import spec_content

SOLO_GATES = (
    "golden",
    "blank",
    "fabricated",
    "wrong_value",
    "decoy",
    "skip_step",
    "stale_value",
    "solvability",
    "leak",
    "discoverability",
)
CHAIN_GATES = (
    "chain_golden",
    "chain_skip_prev",
    "chain_decoy_segK-1",
    "chain_decoy_segK",
    "chain_stale",
    "chain_skip_carried",
    "leak",
)


def spec_text(world: WorldDef) -> str:
    """The spec entity as text (what leak and discoverability compare against)."""
    return json.dumps(spec_content(world), ensure_ascii=False)


def check_solo(
    task: Task,
    world: WorldDef,
    log: GateLog,
    *,
    oracle_model: str | None = None,
    spec: str | None = None,
    bank: Any = None,
) -> bool:
    """Every subtask gate for one task; True when all pass."""
    spec = spec if spec is not None else spec_text(world)
    ok = triad(task, world, log)
    ok &= solvability(task, world, log, oracle_model, bank)
    ok &= leak(task, world, spec, log)
    ok &= discoverability(task, world, spec, log)
    return ok


def check_chains(chains: list[Task], world: WorldDef, subs: dict[int, Task], log: GateLog) -> None:
    """Every chain gate for a world's chains."""
    chain_gates.check(chains, world, subs, log)


def verify_bank(bank: Any, *, oracle_model: str | None = None) -> GateLog:
    """Run every gate over every task of a loaded bank."""
    log = GateLog()
    for wid, world in bank.worlds.items():
        spec = spec_text(world)
        tasks = [t for t in bank.tasks.values() if t.world == wid]
        subs = {t.length: t for t in tasks if t.kind == "solo"}
        for task in subs.values():
            check_solo(task, world, log, oracle_model=oracle_model, spec=spec, bank=bank)
        check_chains([t for t in tasks if t.kind == "chain"], world, subs, log)
    return log


__all__ = [
    "CHAIN_GATES",
    "SOLO_GATES",
    "GateLog",
    "GateResult",
    "check_chains",
    "check_solo",
    "spec_text",
    "verify_bank",
]
