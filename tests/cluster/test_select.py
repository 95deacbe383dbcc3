"""Subset sweeps: select by axis and difficulty, leave tasks out, draw a seeded stratified sample."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
import yaml

from apiflow.bank import load_bank
from apiflow.errors import UsageError
from cluster.manifest import grid_id
from cluster.plan import select_tasks
from cluster.spec import GridSpec, load_grid

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bank():
    return load_bank(ROOT / "bank" / "v1")


def _spec(**tasks) -> GridSpec:
    return GridSpec.model_validate({"bank": str(ROOT / "bank" / "v1"), "models": [{"model": "apiflow/oracle"}],
                                    "tasks": tasks})  # fmt: skip


def test_axis_and_difficulty_keep_only_those_tasks(bank) -> None:
    kept = select_tasks(_spec(axes=["pagination", "authentication"], difficulties=["hard"]), bank)
    assert kept and {t.axis for t in kept} <= {"pagination", "authentication"}
    assert {t.difficulty for t in kept} == {"hard"}
    every = [t for t in bank.tasks.values() if t.axis in ("pagination", "authentication") and t.difficulty == "hard"]
    assert [t.id for t in kept] == [t.id for t in every]


def test_an_unknown_axis_is_named_with_the_banks_axes(bank) -> None:
    with pytest.raises(UsageError, match="no axis \\['paging'\\].*pagination"):
        select_tasks(_spec(axes=["paging"]), bank)


def test_a_stratified_sample_keeps_every_world_and_axis_and_is_seeded(bank) -> None:
    whole = select_tasks(_spec(kind="solo"), bank)
    drawn = select_tasks(_spec(kind="solo", sample={"fraction": 0.25}), bank)
    strata = collections.Counter((t.world, t.axis) for t in whole)
    assert collections.Counter((t.world, t.axis) for t in drawn).keys() == strata.keys()
    assert len(drawn) == sum(max(1, round(n * 0.25)) for n in strata.values())  # at least one a stratum
    assert drawn == select_tasks(_spec(kind="solo", sample={"fraction": 0.25}), bank)  # same seed, same draw
    other = GridSpec.model_validate({**_spec(kind="solo", sample={"fraction": 0.25}).model_dump(), "seed": 7})
    assert select_tasks(other, bank) != drawn
    two = select_tasks(_spec(kind="solo", sample={"count": 2, "per": "world"}), bank)
    assert set(collections.Counter(t.world for t in two).values()) == {2}


def test_a_sample_takes_one_size() -> None:
    with pytest.raises(ValueError, match="exactly one of fraction or count"):
        _spec(sample={"fraction": 0.5, "count": 3})


def test_an_exclude_file_beside_the_grid_leaves_its_tasks_out(bank, tmp_path: Path) -> None:
    (tmp_path / "screened.txt").write_text("# screened cells\nv1-w01-sub01\nv1-w01-sub02  # too easy\n\n")
    grid = {"bank": str(ROOT / "bank" / "v1"), "models": [{"model": "apiflow/oracle"}],
            "tasks": {"worlds": ["w01"], "exclude_file": "screened.txt"}}  # fmt: skip
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    spec = load_grid(tmp_path / "grid.yaml")
    assert spec.tasks.exclude == ["v1-w01-sub01", "v1-w01-sub02"]
    kept = {t.id for t in select_tasks(spec, bank)}
    assert kept and not kept & {"v1-w01-sub01", "v1-w01-sub02"}
    grid["tasks"]["exclude_file"] = "missing.txt"
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    with pytest.raises(UsageError, match="cannot read the exclude file .*missing.txt"):
        load_grid(tmp_path / "grid.yaml")


def test_a_grid_without_the_new_filters_keeps_its_id(bank) -> None:
    spec = _spec(kind="solo")
    assert "axes" not in spec.identity()["tasks"] and "sample" not in spec.identity()["tasks"]
    assert grid_id(spec, bank) != grid_id(_spec(kind="solo", axes=["pagination"]), bank)
