"""Bank loading: manifest verification, clear refusals, chain composition (REFERENCE §4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from apiflow.bank import DEFAULT_BANK, load_bank, write_manifest
from apiflow.errors import UsageError
from apiflow.grading.spec import NewResponseSpec


@pytest.fixture
def bank_copy(tmp_path: Path) -> Path:
    target = tmp_path / "bank"
    shutil.copytree(DEFAULT_BANK, target)
    return target


def test_sample_bank_loads_with_chains() -> None:
    bank = load_bank()
    assert bank.name == "sample" and len(bank.hash) == 64
    assert [t for t in bank.tasks if "chain" in t] == [f"sample-w01-chain-1to{k:02d}" for k in range(2, 8)]


def test_one_changed_byte_is_refused(bank_copy: Path) -> None:
    path = bank_copy / "tasks" / "sample-w01-sub03.yaml"
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(UsageError, match="sample-w01-sub03.yaml: content does not match"):
        load_bank(bank_copy)


def test_extra_and_missing_files_are_refused(bank_copy: Path) -> None:
    (bank_copy / "tasks" / "extra.yaml").write_text("{}")
    with pytest.raises(UsageError, match="present but not listed"):
        load_bank(bank_copy)
    (bank_copy / "tasks" / "extra.yaml").unlink()
    (bank_copy / "tasks" / "sample-w01-sub01.yaml").unlink()
    with pytest.raises(UsageError, match="listed in the manifest but missing"):
        load_bank(bank_copy)


def test_missing_folder_and_invalid_task_are_clear(bank_copy: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_bank(tmp_path / "nope")
    (bank_copy / "tasks" / "sample-w01-sub01.yaml").write_text("id: sample-w01-sub01\nworld: w01\n")
    write_manifest(bank_copy, "sample")
    with pytest.raises(UsageError, match="invalid Task"):
        load_bank(bank_copy)


def test_chain_is_composed_from_its_subtasks() -> None:
    bank = load_bank()
    chain, subs = (
        bank.task("sample-w01-chain-1to05"),
        [bank.task(f"sample-w01-sub{k:02d}") for k in range(1, 6)],
    )
    assert chain.card_fields == subs[-1].card_fields
    assert chain.seed == subs[0].seed
    assert chain.world_state == subs[0].world_state
    assert chain.checkpoints == [c for s in subs for c in s.checkpoints]
    assert chain.constraints == [c for s in subs for c in s.constraints]
    kept = [p for p in subs[-1].predicates if not isinstance(p, NewResponseSpec)]
    assert [p.model_copy(update={"segment": 5}) for p in kept] == chain.predicates
    assert len(chain.golden) == sum(len(s.golden) for s in subs)


def test_chain_golden_refs_are_renumbered() -> None:
    from apiflow.bank.chain import _shift_refs

    assert _shift_refs({"a": ["{{ref:0}}/x", "{{ref:12}}"]}, 3) == {"a": ["{{ref:3}}/x", "{{ref:15}}"]}


def test_unknown_task_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown task 'nope'"):
        load_bank().task("nope")
