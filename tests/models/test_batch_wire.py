"""The batch tier under real litellm, against the stand-in's batch APIs on 127.0.0.1: a turn sent
through a trial's batch wire is the same request and comes back as the same parsed turn as on the
synchronous tier, on the openai/ chat and anthropic/ routes; the store's journal keeps it paid once."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.results.batch_journal import BatchJournal
from apiflow.results.objects import ObjectFolder
from apiflow.testing.standin_server import StandinConfig, StandinServer
from cluster.batching import BatchTiers
from cluster.spec import GridSpec

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")

PLAYS = (("gpt-5-mini", "apiflow/oracle"), ("claude-sonnet-4-6", "apiflow/oracle"))
TASKS = ("sample-w01-sub01", "sample-w01-sub02", "sample-w01-chain-1to02")


@pytest.fixture
def standin():
    with StandinServer(StandinConfig(plays=PLAYS, batch_latency_s=0.2)) as url:
        yield url


def grid(root: str, size: int) -> GridSpec:
    batching = {"size": size, "wait_s": 0.05, "poll_s": 0.05, "deadline_s": 30}
    return GridSpec.model_validate({"models": [
        {"model": "openai/gpt-5-mini", "tier": "batch", "batching": batching,
         "params": {"api_base": f"{root}/v1", "api_key": "sk-test"}},
        {"model": "anthropic/claude-sonnet-4-6", "tier": "batch", "batching": batching,
         "params": {"api_base": root, "api_key": "sk-test"}},
    ]})  # fmt: skip


def call_args(spec: GridSpec, index: int, task_id: str) -> dict[str, Any]:
    model = spec.models[index]
    task = load_bank(DEFAULT_BANK).task(task_id)
    return {"model": model.model, "messages": initial_messages(task), "max_tokens": 256,
            "max_retries": 0, **model.params}  # fmt: skip


def turn_of(response: Any) -> tuple[Any, ...]:
    message = response.choices[0].message
    calls = tuple((c.function.name, c.function.arguments) for c in message.tool_calls or ())
    usage = response.usage
    return message.content, calls, usage.prompt_tokens, usage.completion_tokens


async def on_both_tiers(spec: GridSpec, tiers: BatchTiers, index: int) -> tuple[list[Any], list[Any], list[str]]:
    wires = [tiers.wire(index, f"trial-{t}") for t in TASKS]
    batched = await asyncio.gather(*(
        litellm.acompletion(**call_args(spec, index, t), client=w.client) for t, w in zip(TASKS, wires, strict=True)
    ))  # fmt: skip
    direct = [await litellm.acompletion(**call_args(spec, index, t)) for t in TASKS]
    return batched, direct, [str(w.transport.last_tier) for w in wires]


@pytest.mark.parametrize("index", [0, 1], ids=["openai-chat", "anthropic"])
def test_a_batched_turn_is_the_synchronous_turn(standin, tmp_path, index):
    root = standin.removesuffix("/v1")
    spec = grid(root, size=len(TASKS))
    tiers = BatchTiers(spec, BatchJournal(ObjectFolder(str(tmp_path))))

    async def run() -> tuple[list[Any], list[Any], list[str]]:
        try:
            return await on_both_tiers(spec, tiers, index)
        finally:
            await tiers.close()

    batched, direct, served = asyncio.run(run())
    assert [turn_of(r) for r in batched] == [turn_of(r) for r in direct]
    assert served == ["batch"] * len(TASKS)
    assert tiers.stats()["batches"] == 1 and tiers.stats()["answered"] == len(TASKS)


def test_a_rerun_of_the_same_trials_reads_the_journal_and_pays_nothing(standin, tmp_path):
    root = standin.removesuffix("/v1")
    spec = grid(root, size=len(TASKS))
    journal = BatchJournal(ObjectFolder(str(tmp_path)))

    async def once() -> list[Any]:
        tiers = BatchTiers(spec, journal)
        wires = [tiers.wire(1, f"trial-{t}") for t in TASKS]
        try:
            return await asyncio.gather(*(
                litellm.acompletion(**call_args(spec, 1, t), client=w.client)
                for t, w in zip(TASKS, wires, strict=True)
            ))  # fmt: skip
        finally:
            await tiers.close()

    first = asyncio.run(once())
    again = asyncio.run(once())
    assert [turn_of(r) for r in again] == [turn_of(r) for r in first]
    stats = StandinServerStats.of(standin)
    assert stats["batch"]["requests"] == len(TASKS) and stats["paid_twice"] == 0


class StandinServerStats:
    @staticmethod
    def of(url: str) -> dict[str, Any]:
        import json
        import urllib.request

        with urllib.request.urlopen(f"{url.removesuffix('/v1')}/v1/stats", timeout=10) as reply:
            return dict(json.loads(reply.read()))


@pytest.mark.parametrize("route", ["openai/gpt-5-mini", "anthropic/claude-sonnet-4-6"])
def test_a_batch_whose_id_was_never_recorded_is_found_at_the_provider_and_no_other(standin, route):
    import time

    from apiflow.models.provider_batches import batch_api

    root = standin.removesuffix("/v1")
    openai_route = route.startswith("openai/")
    api = batch_api(route, {"api_base": standin if openai_route else root, "api_key": "sk-test"})
    name = route.split("/", 1)[1]

    def requests(ids: list[str]) -> list[dict[str, Any]]:
        body = {"model": name, "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}
        return [{"custom_id": cid, "body": body} for cid in ids]

    async def run() -> tuple[str, str | None, str | None, str | None]:
        since = time.time()
        ours = await api.submit("k-ours", requests(["a1", "a2"]))
        await api.submit("k-other", requests(["b1", "b2"]))  # another worker's, of the same size
        while not await api.ended(ours):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # the other one ends too
        return (
            ours,
            await api.find("k-ours", ["a1", "a2"], since),
            await api.find("k-lost", ["c1", "c2"], since),  # never reached the provider
            await api.find("k-ours", ["a1", "a2"], since + 3600),
        )

    ours, found, lost, late = asyncio.run(run())
    assert found == ours and lost is None
    # OpenAI's tag (metadata) names the batch outright; an untagged Message Batch must have been made
    # in the minutes after the intent.
    assert late == (ours if openai_route else None)
