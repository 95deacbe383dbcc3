"""``grid run --extend``: more epochs, models or tasks in a folder that holds a finished grid."""

from __future__ import annotations

import json

import pytest
from test_grid_ray import grid

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.cli import main
from apiflow.errors import UsageError
from apiflow.results.prices import load_price_table
from apiflow.results.store import ResultStore
from cluster.driver import run_grid
from cluster.extend import EXTENDS, check_extension, extension_gap, what_changed
from cluster.manifest import build_manifest
from cluster.plan import plan_grid


def _stored(spec) -> dict:
    bank = load_bank(DEFAULT_BANK)
    plan = plan_grid(spec, bank)
    return build_manifest(spec, bank, load_price_table(spec.price_table), len(plan))


def _ids(spec) -> set[str]:
    return {t.trial_id for t in plan_grid(spec, load_bank(DEFAULT_BANK))}


def test_more_epochs_models_or_tasks_extend_the_stored_grid(tmp_path) -> None:
    base = grid(str(tmp_path), tasks={"count": 6}, epochs=1)
    stored, bank = _stored(base), load_bank(DEFAULT_BANK)
    models = [{"model": m} for m in ("apiflow/oracle", "apiflow/sim:strong", "apiflow/sim:weak", "apiflow/blank")]
    for bigger in (
        grid(str(tmp_path), tasks={"count": 6}, epochs=3),
        grid(str(tmp_path), tasks={"count": 9}, epochs=1),
        grid(str(tmp_path), tasks={"count": 6}, epochs=1, models=models),
    ):
        assert extension_gap(stored, bank, _ids(bigger)) is None
        check_extension(stored, bigger, bank, _ids(bigger), extend=True, url="out")
    assert what_changed(stored, grid(str(tmp_path), tasks={"count": 6}, epochs=3)) == "epochs 1 -> 3"
    assert "models added: apiflow/blank" in what_changed(stored, grid(str(tmp_path), tasks={"count": 6}, models=models))


@pytest.mark.parametrize(
    "changes",
    [
        {"models": [{"model": "apiflow/oracle"}], "tasks": {"count": 6}, "epochs": 1},  # models dropped
        {"tasks": {"count": 6}, "epochs": 1, "seed": 7},  # every trial id changes
        {"tasks": {"count": 6}, "epochs": 1, "limits": {"max_messages": 40}},
    ],
)
def test_a_grid_that_leaves_stored_trials_out_is_no_extension(tmp_path, changes) -> None:
    stored, bank = _stored(grid(str(tmp_path), tasks={"count": 6}, epochs=1)), load_bank(DEFAULT_BANK)
    other = grid(str(tmp_path), **changes)
    assert "not in this grid" in (extension_gap(stored, bank, _ids(other)) or "")
    with pytest.raises(UsageError, match="does not extend the one stored there"):
        check_extension(stored, other, bank, _ids(other), extend=True, url="out")


def test_without_extend_a_changed_grid_is_refused_with_the_way_forward(tmp_path) -> None:
    stored, bank = _stored(grid(str(tmp_path), tasks={"count": 6}, epochs=1)), load_bank(DEFAULT_BANK)
    bigger = grid(str(tmp_path), tasks={"count": 6}, epochs=2)
    with pytest.raises(UsageError, match=r"\(epochs 1 -> 2\); if this grid only adds .* rerun with --extend"):
        check_extension(stored, bigger, bank, _ids(bigger), extend=False, url="out")


def test_another_bank_is_no_extension(tmp_path) -> None:
    stored = _stored(grid(str(tmp_path), tasks={"count": 6}, epochs=1))
    stored["bank"]["hash"] = "0" * 64
    assert "bank differs" in (extension_gap(stored, load_bank(DEFAULT_BANK), set()) or "")


@pytest.mark.cluster
@pytest.mark.slow
def test_extend_runs_only_the_new_trials_and_keeps_the_history(ray_session, tmp_path, capsys) -> None:
    out = str(tmp_path / "out")
    first = run_grid(grid(out, tasks={"count": 8}, epochs=1), progress=False)
    assert first.complete and first.planned == 24
    before = ResultStore(out).read_manifest()
    assert before is not None
    bigger = grid(out, tasks={"count": 8}, epochs=2)
    with pytest.raises(UsageError, match="rerun with --extend"):
        run_grid(bigger, progress=False)
    second = run_grid(bigger, progress=False, extend=True)
    assert second.complete and second.planned == 48 and second.already_done == 24
    assert second.tally is not None and second.tally.stored == 24  # only the new epoch ran
    store = ResultStore(out)
    ids = store.row_ids()
    assert len(ids) == len(set(ids)) == 48
    after = store.read_manifest()
    assert after is not None and after[EXTENDS] == [before["grid_id"]]
    kept = json.loads((tmp_path / "out" / "manifests" / f"{before['grid_id']}.json").read_text())
    assert kept["grid_id"] == before["grid_id"]
    assert main(["grid", "verify", out]) == 0 and "whole" in capsys.readouterr().out
    again = run_grid(bigger, progress=False)  # the extended grid is now the folder's own: no flag
    assert again.complete and again.already_done == 48
