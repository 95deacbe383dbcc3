"""Chain gates: forward golden replay passes; dependency shortcuts fail.

Shortcuts replayed for chain 1..K: skipping segment K-1 whose output segment K needs;
taking the decoys of segment K-1 or of segment K; using the stale value sub K was seeded
with instead of the live one the chain itself produced.
"""

from __future__ import annotations

from apiflow.bank.gates.harness import Run, card_message, golden_calls, run_script
from apiflow.bank.gates.result import GateLog
from apiflow.bank.gates.solo import card_strings, stale_pairs
from apiflow.bank.task import Task
from apiflow.world import WorldDef


def forward(chains: list[Task], world: WorldDef, log: GateLog) -> None:
    """Replay the longest chain once, grading each shorter chain at its segment boundary.

    Chains of one world share their golden prefix (chain 1..K's steps are subs 1..K's), so one
    replay graded at every boundary is the same evidence K separate replays would produce.
    """
    if not chains:
        return
    longest = max(chains, key=lambda t: t.length)
    by_len = {t.length: t for t in chains}
    run = Run(longest, world)
    calls = golden_calls(longest)
    seg_of = [s.segment for s in longest.golden for c in s.calls]
    i = 0
    for k in range(1, longest.length + 1):
        while i < len(calls) and seg_of[i] == k:
            run.feed([calls[i]])
            i += 1
        task = by_len.get(k)
        if task is None:
            continue
        run.task = task
        grade = run.grade(card_message(task.expected_card))
        log.add(task.id, "chain_golden", grade.passed, "" if grade.passed else grade.failure_reason)


def negatives(chain: Task, world: WorldDef, subs: dict[int, Task], log: GateLog) -> None:
    """Dependency shortcuts of one chain must fail."""
    k, answer = chain.length, card_message(chain.expected_card)
    prev = [i for i, s in enumerate(chain.golden) if s.segment == k - 1]
    calls = [c for i, step in enumerate(chain.golden) if i not in prev for c in _step_calls(chain, i)]
    passed = run_script(chain, world, _renumber(calls), answer)[1].passed
    log.add(
        chain.id, "chain_skip_prev", not passed, f"skipping segment {k - 1} still passed" if passed else ""
    )
    for seg in (k - 1, k):
        at = {i for i, s in enumerate(chain.golden) if s.segment == seg and s.decoy}
        if at:
            passed = run_script(chain, world, golden_calls(chain, decoy_at=at), answer)[1].passed
            log.add(
                chain.id,
                f"chain_decoy_seg{'K' if seg == k else 'K-1'}",
                not passed,
                f"decoys of segment {seg} still passed" if passed else f"{len(at)} decoy(s)",
            )
    for pair in stale_pairs(subs[k]):
        passed = run_script(chain, world, golden_calls(chain, replace=pair, segments={k}), answer)[1].passed
        log.add(chain.id, "chain_stale", not passed, f"stale {pair[1]!r} still passed" if passed else "")
    leaked = [v for v in card_strings(chain.expected_card) if v in chain.prompt]
    log.add(chain.id, "leak", not leaked, f"prompt holds card value(s) {leaked}" if leaked else "")


def _step_calls(task: Task, index: int) -> list[dict]:
    return [{"name": c.name, "arguments": c.arguments} for c in task.golden[index].calls]


def _renumber(calls: list[dict]) -> list[tuple[dict, int | None]]:
    return [(c, None) for c in calls]
