"""``grid run --models/--tasks/--epochs``: part of a grid now, the rest later, in the same folder."""

from __future__ import annotations

import pytest
import yaml
from test_grid_ray import grid

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.cli import main
from apiflow.errors import UsageError
from apiflow.results.store import ResultStore
from cluster.driver import run_grid
from cluster.plan import plan_grid
from cluster.selection import Selection


def _plan(spec):
    return plan_grid(spec, load_bank(DEFAULT_BANK))


def test_a_selection_keeps_its_models_tasks_and_epochs_in_plan_order(tmp_path) -> None:
    spec = grid(str(tmp_path), tasks={"count": 6}, epochs=3)
    plan = _plan(spec)
    task = plan[0].task_id
    kept = Selection.from_flags("apiflow/oracle,apiflow-sim-weak", task, 2).keep(spec, plan)
    slugs = {spec.models[t.model_index].slug for t in kept}
    assert slugs == {spec.models[0].slug, spec.models[2].slug}
    assert {t.task_id for t in kept} == {task} and {t.epoch for t in kept} == {1, 2}
    assert len(kept) == 2 * 2  # two models, one task, two epochs
    assert kept == [t for t in plan if t in kept]  # plan order kept
    assert Selection().keep(spec, plan) is plan


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("apiflow/nope", None, None), "the grid has no model apiflow/nope"),
        ((None, "sample-w99-sub01", None), "the grid plans no task sample-w99-sub01"),
        ((None, None, 4), "--extend"),
        ((None, None, 0), "epochs 1..3"),
    ],
)
def test_a_selection_outside_the_grid_is_one_line_with_the_fix(tmp_path, flags, message) -> None:
    spec = grid(str(tmp_path), tasks={"count": 6}, epochs=3)
    with pytest.raises(UsageError, match=message):
        Selection.from_flags(*flags).keep(spec, _plan(spec))


def test_dry_run_says_what_part_of_the_grid_runs(tmp_path, capsys) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(grid(str(tmp_path / "out"), tasks={"count": 6}, epochs=3).model_dump(mode="json")))
    assert main(["grid", "run", str(path), "--dry-run", "--models", "apiflow/oracle", "--epochs", "1"]) == 0
    captured = capsys.readouterr()
    assert "selected 6 of the grid's 54 trials" in captured.err
    assert main(["grid", "run", str(path), "--dry-run", "--models", "nope"]) == 2
    assert "the grid has no model nope" in capsys.readouterr().err


@pytest.mark.cluster
@pytest.mark.slow
def test_a_selected_run_leaves_the_rest_pending_for_the_next(ray_session, tmp_path) -> None:
    out = str(tmp_path / "out")
    spec = grid(out, tasks={"count": 6}, epochs=2)
    first = run_grid(spec, progress=False, selection=Selection(models=("apiflow/oracle",), epochs=1))
    assert first.complete and first.planned == 6 and first.grid_planned == 36
    assert len(ResultStore(out).done_ids()) == 6
    rest = run_grid(spec, progress=False)  # no flags: the same grid, the rest of it
    assert rest.complete and rest.already_done == 6 and rest.planned == 36
    ids = ResultStore(out).row_ids()
    assert len(ids) == len(set(ids)) == 36
