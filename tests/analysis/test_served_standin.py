"""End to end through the stand-in provider: a fingerprint change between epochs flags the cell in the report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from apiflow.agent import TrialSpec
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.cli import main
from apiflow.models import make_model
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm
from apiflow.results.rows import ROW_SCHEMA, record_to_row
from apiflow.runner import play_trial_sync
from apiflow.testing import standin_openai
from apiflow.testing.standin_server import StandinConfig, StandinServer

CHANGED, STEADY = "sample-w01-sub01", "sample-w01-sub02"


@pytest.fixture
def standin() -> Iterator[StandinServer]:
    configure_litellm()
    server = StandinServer(StandinConfig(plays=(("gpt-5-mini", "apiflow/oracle"),)))
    server.start()
    yield server
    server.stop()


def test_a_provider_update_between_epochs_is_flagged_in_the_report(standin, monkeypatch, tmp_path, capsys):
    # The stand-in names one fixed fingerprint; here it answers with whatever ``fingerprint`` holds,
    # as a provider does that redeploys a model id between two epochs.
    fingerprint = {"now": "fp_standin"}
    render = standin_openai.render_completion

    def rendered(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {**render(*args, **kwargs), "system_fingerprint": fingerprint["now"]}

    monkeypatch.setattr(standin_openai, "render_completion", rendered)
    bank = load_bank(DEFAULT_BANK)
    params = {"api_base": standin.url, "api_key": "sk-standin"}

    def play(task_id: str, epoch: int, model: str) -> dict:
        task = bank.task(task_id)
        spec = TrialSpec(task=task, world=bank.world_of(task), seed=epoch, epoch=epoch, bank_name=bank.name,
                         bank_hash=bank.hash, run_id="r", model_slug=model)  # fmt: skip
        client = (
            LiteLLMClient("openai/gpt-5-mini", params)
            if model == "gpt"
            else make_model("apiflow/oracle", task, epoch)
        )
        return record_to_row(play_trial_sync(spec, client), panel="e2e")

    rows = [play(CHANGED, 1, "gpt"), play(STEADY, 1, "gpt"), play(STEADY, 2, "gpt")]
    fingerprint["now"] = "fp_updated"
    rows.append(play(CHANGED, 2, "gpt"))
    rows += [play(task, epoch, "oracle") for task in (CHANGED, STEADY) for epoch in (1, 2)]
    assert [r["served"] for r in rows[:4]] == ["gpt-5-mini@fp_standin"] * 3 + ["gpt-5-mini@fp_updated"]
    assert all(r["served"] is None for r in rows[4:])  # offline: nothing served

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), path)
    out = tmp_path / "rep"
    assert main(["report", str(path), "--out", str(out), "--bootstrap", "0"]) == 0
    capsys.readouterr()
    served = json.loads((out / "summary.json").read_text())["served"]
    assert [(c["model"], c["task_id"], c["served"]) for c in served["flagged"]] == [
        ("gpt", CHANGED, {"gpt-5-mini@fp_standin": 1, "gpt-5-mini@fp_updated": 1})
    ]
    assert "## Served models" in (out / "leaderboard.md").read_text()
