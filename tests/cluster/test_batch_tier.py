"""A grid model on the batch tier (``tier: batch``), played by a worker against the stand-in's batch
APIs: the same trials and verdicts as on the synchronous tier, every call served and priced as
batch, the turns of concurrent trials gathered into shared batches, and a rerun paying nothing."""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from apiflow.bank import DEFAULT_BANK
from apiflow.results.prices import cost_usd, load_price_table
from apiflow.testing.standin_server import StandinConfig, StandinServer
from cluster.plan import plan_grid
from cluster.spec import GridSpec
from cluster.worker import TrialRunner, load_checked_bank

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
pytest.importorskip("litellm")

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["sample-w01-sub01", "sample-w01-sub02", "sample-w01-sub03", "sample-w01-chain-1to02"]
MODEL = "claude-sonnet-4-6"


def grid(out: Path, root: str, tier: str) -> GridSpec:
    return GridSpec.model_validate({
        "name": f"batch-{tier}", "bank": str(DEFAULT_BANK), "out": str(out), "epochs": 1,
        "tasks": {"ids": TASKS}, "price_table": str(ROOT / "configs/prices/2027-02.yaml"),
        "concurrency": {"trials_per_actor": 8}, "preflight": "off", "canary_key": "none",
        "models": [{"model": f"anthropic/{MODEL}", "slug": MODEL, "tier": tier, "max_tokens": 512,
                    "batching": {"size": len(TASKS), "wait_s": 0.1, "poll_s": 0.05, "deadline_s": 60},
                    "params": {"api_base": root, "api_key": "sk-test"}}],
    })  # fmt: skip


def play(spec: GridSpec) -> dict[str, Any]:
    runner = TrialRunner(spec, "r")
    plan = plan_grid(spec, load_checked_bank(spec))

    async def run() -> dict[str, Any]:
        try:
            played = await asyncio.gather(*(runner._play(p) for p in plan))
        finally:
            await runner.batching.close()
        return {"records": {r.apiflow.trial_id: r for r, _ in played}, "batching": runner.batching.stats()}

    return asyncio.run(run())


def stats(root: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{root}/v1/stats", timeout=10) as reply:
        return dict(json.loads(reply.read()))


def test_the_batch_tier_plays_the_same_trials_at_half_the_price(tmp_path):
    config = StandinConfig(plays=((MODEL, "apiflow/oracle"),), batch_latency_s=0.1)
    with StandinServer(config) as url:  # a provider each: both start with a cold prompt cache
        sync = play(grid(tmp_path / "sync", url.removesuffix("/v1"), "standard"))
    with StandinServer(config) as url:
        root = url.removesuffix("/v1")
        batch = play(grid(tmp_path / "batch", root, "batch"))
        billed = stats(root)
    standard = load_price_table(ROOT / "configs/prices/2027-02.yaml").price(MODEL)
    assert sync["records"].keys() == batch["records"].keys()  # the tier is not in the trial id
    for trial_id, record in batch["records"].items():
        twin = sync["records"][trial_id]
        assert record.passed == twin.passed and record.apiflow.termination == twin.apiflow.termination
        assert [m["content"] for m in record.messages] == [m["content"] for m in twin.messages]
        assert {entry[3] for entry in record.apiflow.served} == {"batch"}
        # Which of the concurrent trials writes a shared prefix to the cache and which reads it
        # depends on arrival order, on either tier; what each trial used is priced at half.
        assert record.apiflow.tokens.output == twin.apiflow.tokens.output
        assert record.apiflow.cost_usd == pytest.approx(0.5 * cost_usd(record.apiflow.tokens, standard), rel=1e-6)
    calls = sum(r.apiflow.model_calls for r in batch["records"].values())
    assert billed["batch"]["requests"] == calls and billed["paid_twice"] == 0
    assert billed["sync"]["requests"] == 0  # nothing went synchronous
    assert batch["batching"]["batches"] < calls  # turns of concurrent trials shared batches


def test_a_rerun_into_the_same_store_reads_every_turn_from_the_journal(tmp_path):
    with StandinServer(StandinConfig(plays=((MODEL, "apiflow/oracle"),), batch_latency_s=0.05)) as url:
        root = url.removesuffix("/v1")
        first = play(grid(tmp_path / "out", root, "batch"))
        paid = stats(root)["batch"]["requests"]
        again = play(grid(tmp_path / "out", root, "batch"))  # a worker killed before it stored them
        assert stats(root)["batch"]["requests"] == paid
    assert again["batching"]["batches"] == 0 and again["batching"]["from_journal"] == paid
    for trial_id, record in again["records"].items():
        assert record.messages == first["records"][trial_id].messages


def test_grid_status_names_the_batches_still_at_the_provider(tmp_path):
    from apiflow.results.batch_journal import BatchJournal
    from apiflow.results.store import ResultStore
    from cluster.status import _batch_lines

    store = ResultStore(str(tmp_path / "out"))
    journal = BatchJournal(store.objects)
    assert _batch_lines(store) == []
    journal.write_intent("k1", "anthropic/x", [{"custom_id": "a", "body": {}}, {"custom_id": "b", "body": {}}], 1.0)
    journal.write_submitted("k1", "msgbatch_1")
    journal.write_intent("k2", "anthropic/x", [{"custom_id": "c", "body": {}}], 2.0)  # killed before the id
    journal.write_intent("k3", "anthropic/x", [{"custom_id": "d", "body": {}}], 3.0)
    journal.write_submitted("k3", "msgbatch_3")
    journal.write_results("k3", {"d": {"ok": True, "body": {}}})
    (line,) = _batch_lines(store)
    assert "3 batches on record, 1 collected; 2 (3 turns) not collected yet" in line
    assert "1 without a recorded id" in line
