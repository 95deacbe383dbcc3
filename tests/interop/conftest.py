"""Fixtures of the interop tests: real trials of ours (scored, unscored, a limit), a grid's result
store holding them, and their Inspect exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from viewer.conftest import harness_copy, records_of  # one maker of harness outcomes for the tests

from apiflow.cli import main
from apiflow.interop.export import iter_trials
from apiflow.results.record import TrialRecord
from apiflow.results.rows import record_to_row
from apiflow.results.store import ResultStore

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "tests" / "data" / "transcripts"
TASKS = ("sample-w01-sub01", "sample-w01-sub05", "sample-w01-chain-1to02", "sample-w01-chain-1to07")
MODELS = ("apiflow/oracle", "apiflow/sim:erratic")
LIMITED_TASK = "sample-w01-chain-1to06"
EPOCHS = 2


def records_by_key(results: Path) -> dict[tuple, dict]:
    """Every trial record under RESULTS (as the export reads it), keyed by (model, task, trial)."""
    return {(t["model"], t["task_id"], t["trial"]): t for t in iter_trials(str(results))}


@pytest.fixture(scope="session")
def own_trials(tmp_path_factory) -> Path:
    """Real trials: two offline models x four tasks x two epochs, plus one chain stopped by a limit,
    plus an unscored copy (provider fault) of one trial under its own task id."""
    out = tmp_path_factory.mktemp("interop-trials")
    for model in MODELS:
        assert (
            main(["run", "--model", model, "--task", *TASKS, "--epochs", str(EPOCHS), "--out", str(out)]) == 0
        )
    assert (
        main(["run", "--model", MODELS[1], "--task", LIMITED_TASK, "--max-messages", "6", "--out", str(out)])
        == 0
    )
    first = records_of(out)[0]
    lost = json.loads(harness_copy(first, trial_id="never-finished").to_json())
    lost["task_id"] = "sample-w01-sub02"  # a (task, trial) of its own: Inspect holds each once
    path = out / Path(first.model.replace("/", "-")) / "sample-w01-sub02-t1.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(TrialRecord.model_validate(lost).to_json())
    return out


@pytest.fixture(scope="session")
def own_grid(own_trials, tmp_path_factory) -> Path:
    """A grid's result store of the same trials; one of them failed once in the harness before it
    was stored (the stored trial must win), and the unscored one never got further."""
    out = tmp_path_factory.mktemp("interop-grid")
    store = ResultStore(str(out))
    store.write_manifest({"grid_id": "interop-test"})
    records = records_of(own_trials)
    retried = harness_copy(records[1])
    store.put_trial(retried, record_to_row(retried))
    for record in records:
        store.put_trial(record, record_to_row(record))
    return out


@pytest.fixture(scope="session")
def own_logs(own_trials, tmp_path_factory) -> Path:
    """The own trials exported: a folder with one .eval per model (``transcripts export``)."""
    out = tmp_path_factory.mktemp("interop-logs")
    assert main(["transcripts", "export", "--format", "inspect", str(own_trials), str(out)]) == 0
    return out
