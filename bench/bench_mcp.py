"""Benchmark: what MCP costs a trial — the oracle over the bridge vs the same oracle in process.

Usage: .venv/bin/python bench/bench_mcp.py [--rounds N] [--task TASK_ID ...]

Runs each task's golden solution (apiflow/oracle) N times in process (the baseline, measured in
this run) and N times through ``AgentBridge`` + the MCP server, played by ``apiflow.mcp.agent.play``
over the SDK's own in-process ``mcp.Client`` (no subprocess, no socket: the protocol layers only).
Prints CPU seconds per trial (``time.process_time``) for both and their ratio, and checks that
every MCP record equals the in-process one apart from wall time, ``model_api`` and trial id.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from mcp import Client

from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.bank.task import Task
from apiflow.mcp import AgentBridge
from apiflow.mcp.agent import play
from apiflow.mcp.serve import first_trial
from apiflow.mcp.server import build_server
from apiflow.models.base import ModelClient
from apiflow.models.offline import oracle_model
from apiflow.results.record import TrialRecord

_SKIP = ("duration_s", "model_api")


async def _trial(bank: Bank, task: Task, model: ModelClient) -> TrialRecord:
    return await first_trial(bank, task, model, slug="bench")


async def _over_mcp(bank: Bank, task: Task) -> TrialRecord:
    bridge = AgentBridge("external/bench", initial_messages(task))
    trial = asyncio.create_task(_trial(bank, task, bridge))
    async with Client(build_server(bridge)) as client:
        await play(client, oracle_model(task))
    return await trial


def _key(record: TrialRecord) -> str:
    data: dict[str, Any] = json.loads(record.to_json())
    for field in _SKIP:
        data.pop(field)
    data["provenance"].pop("created")
    data["apiflow"].pop("trial_id")
    return json.dumps(data, sort_keys=True)


async def main(rounds: int, task_ids: list[str]) -> None:
    bank = load_bank(DEFAULT_BANK)
    tasks = [bank.task(t) for t in task_ids] if task_ids else list(bank.tasks.values())
    cpu: dict[str, float] = {"in-process": 0.0, "mcp": 0.0}
    mismatches = 0
    for _ in range(rounds):
        for task in tasks:
            start = time.process_time()
            base = await _trial(bank, task, oracle_model(task))
            cpu["in-process"] += time.process_time() - start
            start = time.process_time()
            served = await _over_mcp(bank, task)
            cpu["mcp"] += time.process_time() - start
            mismatches += _key(base) != _key(served)
    n = rounds * len(tasks)
    calls = sum(sum(len(s.calls) for s in t.golden) for t in tasks) * rounds
    per_trial = {k: v / n * 1000 for k, v in cpu.items()}
    print(f"{n} trials ({calls} tool calls) per mode, CPU ms per trial:")
    for mode, ms in per_trial.items():
        print(f"  {mode:10s} {ms:8.1f}")
    print(
        f"mcp / in-process: {per_trial['mcp'] / per_trial['in-process']:.1f}x  "
        f"(+{(cpu['mcp'] - cpu['in-process']) / calls * 1000:.2f} ms per tool call)"
    )
    print(f"records differing apart from wall time, model_api, trial id: {mismatches}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--task", nargs="*", default=[])
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.task))
