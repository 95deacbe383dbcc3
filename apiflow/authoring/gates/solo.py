"""Grader triad and stale-value sabotage for one task: the grader must be load-bearing."""

from __future__ import annotations

import json
from typing import Any

from apiflow.authoring.gates.harness import card_message, golden_calls, golden_plan, run_script
from apiflow.authoring.gates.result import GateLog
from apiflow.bank.stale import stale_pairs
from apiflow.bank.task import Task
from apiflow.world import WorldDef, body_text


def wrong_value(expected: Any) -> Any:
    """A plausible but wrong value of the same type."""
    if isinstance(expected, bool):
        return not expected
    if isinstance(expected, int | float):
        return expected + 7
    if isinstance(expected, list):
        return expected[:-1] or ["none"]
    return f"{expected}-x" if expected else "unknown"


def triad(task: Task, world: WorldDef, log: GateLog) -> bool:
    """Golden passes; blank, fabricated, wrong-value, decoy, skipped-step and stale runs all fail."""
    tid, card = task.id, task.expected_card
    answer = card_message(card)
    run, golden = run_script(task, world, golden_calls(task), answer)
    ok = log.add(tid, "golden", golden.passed, "" if golden.passed else golden.failure_reason)
    _, blank = run_script(task, world, [], "")
    ok &= log.add(tid, "blank", not blank.passed, "blank run passed" if blank.passed else "")
    _, fab = run_script(task, world, [], answer)
    ok &= log.add(tid, "fabricated", not fab.passed, "answer without calls passed" if fab.passed else "")
    bad = [f for f in card if run.grade(card_message({**card, f: wrong_value(card[f])})).passed]
    ok &= log.add(tid, "wrong_value", not bad, f"wrong {bad} still passed" if bad else "")
    decoys = [i for i, s in enumerate(task.golden) if s.decoy]
    leaked = []
    for i in decoys:
        plan = golden_plan(task, decoy_at={i})
        drun, g = run_script(task, world, [(c, r) for c, r, _ in plan], answer)
        if g.passed:
            leaked.append(f"decoy at step {i} passed")
        # The decoy's own responses: executes are recorded in order, one exchange each.
        executes = [step for c, _, step in plan if c["name"] == "execute"]
        texts = [
            body_text(e.response.body)
            for e, step in zip(drun.workspace.exchanges, executes, strict=False)
            if step == i and e.response is not None
        ]
        leaked += [
            f"decoy response holds card value {v!r}"
            for v in _card_strings(card)
            if any(v in t for t in texts)
        ]
    ok &= log.add(tid, "decoy", not leaked, "; ".join(leaked) if leaked else f"{len(decoys)} decoy(s)")
    skipped = [
        i
        for i, s in enumerate(task.golden)
        if s.essential and run_script(task, world, golden_calls(task, skip=i), answer)[1].passed
    ]
    ok &= log.add(
        tid, "skip_step", not skipped, f"skipping step(s) {skipped} still passed" if skipped else ""
    )
    if task.kind == "solo":
        stale = [
            p
            for p in stale_pairs(task)
            if run_script(task, world, golden_calls(task, replace=p), answer)[1].passed
        ]
        ok &= log.add(tid, "stale_value", not stale, f"stale {stale} still passed" if stale else "")
    return ok


def _card_strings(card: dict[str, Any]) -> list[str]:
    out = []
    for value in card.values():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and len(v) >= 6 and any(ch.isdigit() for ch in v):
                out.append(v)
    return out


def card_strings(card: dict[str, Any]) -> list[str]:
    """The distinctive string values of a card (what must never leak)."""
    return _card_strings(card)


def dumps(value: Any) -> str:
    """JSON text for substring checks."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
