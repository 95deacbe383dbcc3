"""Every gate fails when it should: one deliberately broken task (or world) per gate."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from apiflow.bank import Bank, Task, load_bank
from apiflow.bank.chain import ChainFile, compose_chain
from apiflow.authoring.gates import check_chains, check_solo, spec_text
from apiflow.authoring.gates.chains import check as chain_check
from apiflow.authoring.gates.harness import Run, card_message, golden_calls, run_script
from apiflow.authoring.gates.oracle import solvability
from apiflow.authoring.gates.result import GateLog
from apiflow.authoring.gates.solo import triad
from apiflow.bank.stale import stale_pairs
from apiflow.authoring.gates.static import discoverability, leak
from apiflow.authoring.generate.plan import bank_shape
from apiflow.world import WorldDef

V1 = "bank/v1"


@cache
def bank() -> Bank:
    return load_bank(V1)


def solo(axis: str, difficulty: str | None = None) -> Task:
    """The first v1 subtask of an axis (and difficulty) beyond sub 1."""
    for task in bank().tasks.values():
        if task.kind == "solo" and task.axis == axis and task.length > 1:
            if difficulty is None or task.difficulty == difficulty:
                return task
    raise LookupError(axis)


def world(task: Task) -> WorldDef:
    return bank().world_of(task)


def failed(log: GateLog) -> set[str]:
    return {r.gate for r in log.failures()}


def edit(task: Task, **update: Any) -> Task:
    return Task.model_validate({**task.model_dump(by_alias=True), **update})


def test_certified_tasks_pass_every_gate() -> None:
    for axis in (
        "authentication",
        "discovery",
        "schema_repair",
        "multistep",
        "error_recovery",
        "pagination",
        "statefulness",
    ):
        task, log = solo(axis), GateLog()
        assert check_solo(task, world(task), log), [r for r in log.failures()]


def test_golden_gate_fails_when_a_state_predicate_cannot_be_met() -> None:
    task = solo("multistep")
    preds = [p.model_dump() for p in task.predicates]
    flow = next(p for p in preds if p["kind"] == "data_flow")
    flow["from_response_url_pattern"] = "v9/nowhere"
    log = GateLog()
    triad(edit(task, predicates=preds), world(task), log)
    assert "golden" in failed(log)


def test_blank_gate_fails_when_nothing_is_checked() -> None:
    task, log = solo("discovery"), GateLog()
    triad(edit(task, predicates=[], card_fields=[]), world(task), log)
    assert "blank" in failed(log)


def test_fabricated_gate_fails_without_state_predicates() -> None:
    task, log = solo("pagination"), GateLog()
    answers = [p.model_dump() for p in task.answer_fields]
    triad(edit(task, predicates=answers), world(task), log)
    assert {"fabricated", "decoy", "skip_step"} <= failed(log)


def test_decoy_gate_fails_when_the_decoy_is_the_real_call() -> None:
    task, log = solo("schema_repair"), GateLog()
    steps = [
        {**s.model_dump(), "decoy": s.model_dump()["calls"]} if s.decoy else s.model_dump()
        for s in task.golden
    ]
    triad(edit(task, golden=steps), world(task), log)
    assert "decoy" in failed(log)


def test_skip_gate_fails_when_an_unneeded_step_is_marked_essential() -> None:
    task, log = solo("multistep"), GateLog()
    steps = [{**s.model_dump(), "essential": True} for s in task.golden]
    triad(edit(task, golden=steps), world(task), log)
    assert "skip_step" in failed(log)


def test_stale_gate_fails_when_the_stale_value_still_works() -> None:
    task = solo("statefulness")
    ((live, stale),) = stale_pairs(task)
    lenient = _world_without(world(task), "-stale")
    kept = [
        p.model_dump()
        for p in task.predicates
        if not (p.kind == "data_flow" and p.used_in_request_url_pattern)
    ]
    broken, log = edit(task, predicates=kept), GateLog()
    triad(broken, lenient, log)
    assert "stale_value" in failed(log)
    triad(task, world(task), log := GateLog())
    assert not log.failures()


def test_solvability_gate_fails_for_an_oracle_that_cannot_solve() -> None:
    task, log = solo("discovery"), GateLog()
    assert not solvability(task, world(task), log, "apiflow/blank", bank())
    assert log.results[-1].detail == "0/10 oracle attempts passed"
    log = GateLog()
    assert solvability(task, world(task), log)
    assert log.results[-1].detail == "10/10 oracle attempts passed"


def test_leak_gate_fails_on_a_card_value_in_the_seed_or_prompt() -> None:
    task = solo("error_recovery")
    value = next(v for v in task.expected_card.values() if isinstance(v, str) and "-" in v)
    seeded = edit(task, seed=[*task.seed, {"scope": "local", "name": "old", "value": value}])
    log = GateLog()
    assert not leak(seeded, world(task), "", log)
    log = GateLog()
    assert not leak(edit(task, prompt=task.prompt + f" (last time it was {value})"), world(task), "", log)


def test_discoverability_gate_fails_when_no_hint_names_the_retry_header() -> None:
    task = next(
        t
        for t in bank().tasks.values()
        if t.kind == "solo" and t.axis == "error_recovery" and "429" in t.prompt
    )
    wdef = world(task)
    log = GateLog()
    assert discoverability(task, wdef, spec_text(wdef), log)
    data = wdef.model_dump(by_alias=True, exclude_none=True)
    for route in data["routes"]:
        for rule in route["rules"]:
            if rule.get("id", "").endswith("-throttled"):
                rule["respond"]["body"] = {"error": "rate_limited", "hint": "Throttled."}
    mute = WorldDef.model_validate(data)
    log = GateLog()
    assert not discoverability(
        edit(task, prompt="The status check is failing, please fix it."), mute, "", log
    )
    assert "header" in log.results[-1].detail


def _world_without(wdef: WorldDef, suffix: str) -> WorldDef:
    data = wdef.model_dump(by_alias=True, exclude_none=True)
    for route in data["routes"]:
        route["rules"] = [r for r in route["rules"] if not r.get("id", "").endswith(suffix)]
    return WorldDef.model_validate(data)


def _chains(wid: str) -> tuple[list[Task], dict[int, Task]]:
    tasks = [t for t in bank().tasks.values() if t.world == wid]
    return [t for t in tasks if t.kind == "chain"], {t.length: t for t in tasks if t.kind == "solo"}


def test_chain_gates_pass_and_fail_on_a_world_without_dependencies() -> None:
    wid = "w06"
    chains, subs = _chains(wid)
    log = GateLog()
    check_chains(chains, bank().worlds[wid], subs, log)
    assert not log.failures()
    log = GateLog()
    chain_check(chains, _world_without(bank().worlds[wid], "-unknown-parent"), subs, log)
    assert "chain_skip_prev" in failed(log)


def test_chain_golden_fails_on_an_unmeetable_predicate() -> None:
    wid = "w06"
    chains, subs = _chains(wid)
    broken = chains[0].model_copy(
        update={
            "predicates": [
                p.model_copy(update={"from_response_url_pattern": "v9/nowhere"})
                if p.kind == "data_flow"
                else p
                for p in chains[0].predicates
            ]
        }
    )
    log = GateLog()
    check_chains([broken, *chains[1:]], bank().worlds[wid], subs, log)
    assert {r.task_id for r in log.failures() if r.gate == "chain_golden"} == {broken.id}


def test_chain_decoy_gate_fails_when_decoys_are_the_real_calls() -> None:
    wid = "w06"
    _, subs = _chains(wid)
    fake = {
        k: edit(
            t,
            golden=[
                {**s.model_dump(), "decoy": s.model_dump()["calls"]} if s.decoy else s.model_dump()
                for s in t.golden
            ],
        )
        for k, t in subs.items()
    }
    chain = compose_chain(
        ChainFile(id=f"v1-{wid}-chain-1to03", world=wid, length=3, prompt="x"), [fake[1], fake[2], fake[3]]
    )
    log = GateLog()
    chain_check([chain], bank().worlds[wid], fake, log)
    assert any(r.gate.startswith("chain_decoy") for r in log.failures())


def test_snapshot_continuation_grades_like_a_full_replay() -> None:
    chains, _ = _chains("w06")
    chain = max(chains, key=lambda t: t.length)
    wdef = bank().worlds["w06"]
    answer = card_message(chain.expected_card)
    full = run_script(chain, wdef, golden_calls(chain, skip=len(chain.golden) - 1), answer)[1]
    calls = golden_calls(chain)
    cut = len(calls) - len(chain.golden[-1].calls)
    run = Run(chain, wdef)
    run.feed(calls[: cut // 2])
    twin = run.clone()
    twin.feed(calls[cut // 2 : cut])
    run.feed(calls[cut // 2 : cut])
    assert twin.grade(answer).verifier == full.verifier == run.grade(answer).verifier


def test_published_shape_constants() -> None:
    shapes = bank_shape()
    assert sum(s.subs for s in shapes) == 241
    assert sum(s.max_chain - 1 for s in shapes) == 226


@pytest.mark.parametrize("task_id", ["v1-w01-sub01", "v1-w13-sub15"])
def test_first_and_last_subtasks_certify(task_id: str) -> None:
    task, log = bank().task(task_id), GateLog()
    assert check_solo(task, world(task), log), log.failures()


def test_wrong_value_gate_fails_when_a_wrong_card_still_matches() -> None:
    task = solo("discovery")
    preds = [p.model_dump() for p in task.predicates]
    # A set expectation with a repeated member: dropping one copy (the sabotage) is the same set.
    preds.append({"kind": "answer_schema", "field": "flags", "expected": ["x-1", "x-1"], "comparator": "set"})
    log = GateLog()
    triad(edit(task, predicates=preds, card_fields=[*task.card_fields, "flags"]), world(task), log)
    assert failed(log) == {"wrong_value"}
    assert "flags" in next(r.detail for r in log.failures())


def test_chain_stale_gate_fails_when_the_stale_revision_still_works() -> None:
    k, sub = next(
        (t.length, t)
        for t in bank().tasks.values()
        if t.kind == "solo" and t.axis == "statefulness" and t.world == "w01"
    )
    _, subs = _chains("w01")
    kept = [
        p.model_dump()
        for p in sub.predicates
        if not (p.kind == "data_flow" and p.used_in_request_url_pattern)
    ]
    subs = {**subs, k: edit(sub, predicates=kept)}
    chain = compose_chain(
        ChainFile(id=f"v1-w01-chain-1to{k:02d}", world="w01", length=k, prompt="x"),
        [subs[i] for i in range(1, k + 1)],
    )
    log = GateLog()
    chain_check([chain], bank().worlds["w01"], subs, log)
    assert not log.failures()
    log = GateLog()
    chain_check([chain], _world_without(bank().worlds["w01"], "-stale"), subs, log)
    assert "chain_stale" in failed(log)


def test_workspace_fork_is_independent_and_safe_on_unknown_layouts() -> None:
    from apiflow.authoring.gates.harness import fork_workspace
    from apiflow.tools import Workspace

    ws = Workspace([], {"document": {}}, 3)
    twin = fork_workspace(ws)
    twin.write_variable("local", "x", 1)
    assert ("local", "x") not in ws.changed_variables and twin.ids.request_id() == ws.ids.request_id()
    ws.cache = {"k": 1}  # type: ignore[attr-defined]
    other = fork_workspace(ws)
    assert other.cache == ws.cache and other.cache is not ws.cache  # type: ignore[attr-defined]
