"""Chain gates: forward golden replay passes; dependency shortcuts fail.

Shortcuts replayed for chain 1..K: skipping segment K-1 whose output segment K needs;
taking the decoys of segment K-1 or of segment K; using the stale value sub K was seeded
with instead of the live one the chain itself produced; and, for a chain that carries earlier
segments' G1 predicates, skipping each carried segment j < K-1 (the rest replayed as golden).

Chains of one world share their golden prefix (chain 1..K's steps are subs 1..K's), so the
longest chain is replayed once and snapshotted at every segment boundary; each chain is
graded at its boundary, and each shortcut continues from the snapshot where it departs
from the golden path. The evidence is the same a full replay would produce.
"""

from __future__ import annotations

from collections.abc import Iterator

from apiflow.authoring.gates.harness import Call, Run, card_message, golden_plan
from apiflow.authoring.gates.result import GateLog
from apiflow.authoring.gates.solo import card_strings
from apiflow.bank.stale import stale_pairs
from apiflow.bank.task import Task
from apiflow.world import WorldDef

Calls = list[tuple[Call, int | None]]


def _segments(task: Task, **variant: object) -> dict[int, Calls]:
    """Calls per segment (refs numbered chain-wide), with a variant (decoys, a replaced value) applied."""
    out: dict[int, Calls] = {}
    for call, ref, index in golden_plan(task, **variant):  # type: ignore[arg-type]
        out.setdefault(task.golden[index].segment or 0, []).append((call, ref))
    return out


def _boundaries(chains: list[Task], world: WorldDef) -> Iterator[tuple[int, Run, Task | None]]:
    """Replay the longest chain's golden path once: ``(k, run, chain 1..k or None)`` after each segment k."""
    longest = max(chains, key=lambda t: t.length)
    by_len = {t.length: t for t in chains}
    golden = _segments(longest)
    run = Run(longest, world)
    yield 0, run, None
    for k in range(1, longest.length + 1):
        run.feed(golden.get(k, []))
        yield k, run, by_len.get(k)


def check(chains: list[Task], world: WorldDef, subs: dict[int, Task], log: GateLog) -> None:
    """Every chain gate for one world's chains."""
    if not chains:
        return
    golden = _segments(max(chains, key=lambda t: t.length))
    snapshots: dict[int, Run] = {}
    for k, run, task in _boundaries(chains, world):
        snapshots[k] = run.clone()
        if task is not None:
            run.task = task
            grade = run.grade(card_message(task.expected_card))
            log.add(task.id, "chain_golden", grade.passed, "" if grade.passed else grade.failure_reason)
    for chain in sorted(chains, key=lambda t: t.length):
        _negatives(chain, world, subs, snapshots, golden, log)


def carried_golden_misses(chains: list[Task], world: WorldDef) -> dict[str, set[int]]:
    """Per chain, the carried segments with a predicate its own golden run leaves failing.

    A carried ``must_be_stored`` value that a later segment overwrites in the same variable no
    longer counts (REFERENCE §5.7), so that segment cannot be carried by the longer chains.
    """
    misses: dict[str, set[int]] = {}
    for _, run, task in _boundaries(chains, world) if chains else ():
        if task is not None:
            run.task = task
            results = run.grade(card_message(task.expected_card)).results
            failed = {r.segment for r in results if not r.passed}
            misses[task.id] = {j for j in failed if j is not None and j < task.length}
    return misses


def carried_segments(chain: Task) -> list[int]:
    """The earlier segments whose predicates a chain carries (none for a chain of the v1 shape)."""
    return sorted({p.segment for p in chain.predicates if p.segment is not None and p.segment < chain.length})


def _continue(snapshot: Run, task: Task, *parts: Calls) -> bool:
    run = snapshot.clone()
    run.task = task
    for calls in parts:
        run.feed(calls)
    return run.grade(card_message(task.expected_card)).passed


def _negatives(
    chain: Task,
    world: WorldDef,
    subs: dict[int, Task],
    snapshots: dict[int, Run],
    golden: dict[int, Calls],
    log: GateLog,
) -> None:
    k = chain.length
    passed = _continue(snapshots[k - 2], chain, golden.get(k, []))
    log.add(
        chain.id, "chain_skip_prev", not passed, f"skipping segment {k - 1} still passed" if passed else ""
    )
    decoyed = _segments(chain, decoy_at=set(range(len(chain.golden))))
    for seg, label in ((k - 1, "chain_decoy_segK-1"), (k, "chain_decoy_segK")):
        if not any(s.decoy for s in chain.golden if s.segment == seg):
            continue
        tail = [decoyed.get(seg, [])] + ([golden.get(k, [])] if seg == k - 1 else [])
        passed = _continue(snapshots[seg - 1], chain, *tail)
        log.add(chain.id, label, not passed, f"decoys of segment {seg} still passed" if passed else "")
    for pair in stale_pairs(subs[k]):
        replaced = _segments(chain, replace=pair).get(k, [])
        passed = _continue(snapshots[k - 1], chain, replaced)
        log.add(chain.id, "chain_stale", not passed, f"stale {pair[1]!r} still passed" if passed else "")
    for j in carried_segments(chain):
        if j < k - 1:  # skipping K-1 is chain_skip_prev
            passed = _continue(snapshots[j - 1], chain, *(golden.get(s, []) for s in range(j + 1, k + 1)))
            log.add(
                chain.id,
                "chain_skip_carried",
                not passed,
                f"skipping segment {j} still passed" if passed else "",
            )
    leaked = [v for v in card_strings(chain.expected_card) if v in chain.prompt]
    log.add(chain.id, "leak", not leaked, f"prompt holds card value(s) {leaked}" if leaked else "")
