"""Chains that carry earlier segments' G1 predicates (``ChainFile.carries``, ``--carry-predicates``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from apiflow.bank import Bank, ChainFile, compose_chain, load_bank
from apiflow.authoring.audit import audit_bank
from apiflow.authoring.gates.chains import carried_segments
from apiflow.authoring.gates.harness import Run, card_message, golden_calls, golden_plan
from apiflow.authoring.generate import V1_SEED, build_bank
from apiflow.cli import main
from apiflow.grading.spec import AnswerFieldSpec, NewResponseSpec

V1 = Path("bank/v1")


@pytest.fixture(scope="module")
def v1() -> Bank:
    return load_bank(V1)


@pytest.fixture(scope="module")
def carried(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """World 1 of the v1 seed with carried predicates, under the v1 name so files compare with bank/v1."""
    out = tmp_path_factory.mktemp("carry") / "w01"
    build_bank(V1_SEED, out, worlds=1, name="v1", carry=["w01"])
    return out


def test_off_composes_exactly_as_before_and_on_adds_tagged_g1_of_every_earlier_segment(v1: Bank) -> None:
    bank = v1
    subs = [bank.tasks[f"v1-w01-sub{k:02d}"] for k in range(1, 6)]
    plain = bank.tasks["v1-w01-chain-1to05"]
    file = ChainFile(id=plain.id, world="w01", length=5, prompt=plain.prompt)
    assert compose_chain(file, subs) == plain
    task = compose_chain(file.model_copy(update={"carries": [1, 2, 3, 4]}), subs)
    assert task.predicates[: len(plain.predicates)] == plain.predicates
    extra = task.predicates[len(plain.predicates) :]
    for j in range(1, 5):
        own = [p for p in subs[j - 1].predicates if not isinstance(p, AnswerFieldSpec | NewResponseSpec)]
        assert [p for p in extra if p.segment == j] == [p.model_copy(update={"segment": j}) for p in own]
    assert carried_segments(task) == [1, 2, 3, 4] and carried_segments(plain) == []


@pytest.mark.parametrize("carries", [[5], [0], [2, 1], [3, 3]])
def test_carries_outside_1_to_k_minus_1_or_unordered_are_refused(carries: list[int]) -> None:
    with pytest.raises(ValueError, match="carries must be increasing"):
        ChainFile(id="v1-w01-chain-1to05", world="w01", length=5, prompt="x", carries=carries)


def test_a_carried_split_passes_every_gate_and_only_its_chain_files_change(carried: Path) -> None:
    report = yaml.safe_load((carried / "validation.json").read_text())
    assert report["revisions"] == [] and not [r for r in report["results"] if not r["ok"]]
    # chains 1to03..1to20 each skip segments 1..K-2 (K-1 is chain_skip_prev)
    assert report["gates"]["chain_skip_carried"]["passed"] == sum(range(1, 19))
    for path in sorted(carried.rglob("*.yaml")):
        rel = path.relative_to(carried)
        mine, theirs = path.read_text(), (V1 / rel).read_text()
        if "-chain-" not in rel.name:
            assert mine == theirs, rel
        else:
            doc, old = yaml.safe_load(mine), yaml.safe_load(theirs)
            assert doc.pop("carries") == list(range(1, old["length"])) and doc == old, rel


def test_a_skipped_middle_segment_fails_and_is_named_the_failure_stage(carried: Path) -> None:
    bank = load_bank(carried)
    task, world = bank.tasks["v1-w01-chain-1to06"], bank.worlds["w01"]
    calls = [(call, ref) for call, ref, index in golden_plan(task) if task.golden[index].segment != 3]
    run = Run(task, world)
    run.feed(calls)
    grade = run.grade(card_message(task.expected_card))
    assert not grade.passed
    assert grade.segment_diagnostics["failure_stage"] == 3
    assert grade.segment_diagnostics["tagged_segments"] == 6
    full = Run(task, world)
    full.feed(golden_calls(task))
    assert full.grade(card_message(task.expected_card)).passed


def test_skip_middle_probe_passes_v1_shape_chains_but_no_carried_chain(carried: Path, v1: Bank) -> None:
    plain = v1
    ids = [t for t in plain.tasks if "-w01-chain-" in t]
    assert audit_bank(plain, task_ids=ids, adversaries=["skip-middle"]).passing(informational=True)
    report = audit_bank(load_bank(carried), task_ids=ids, adversaries=["skip-middle"])
    assert report.passing(informational=True) == [] and report.sound


def test_cli_refuses_a_malformed_world_list(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(
        ["bank", "build", "--seed", "3", "--worlds", "1", "--carry-predicates", "w1", "--out", str(tmp_path)]
    )
    assert code == 2 and "--carry-predicates takes 'all' or world ids" in capsys.readouterr().err
