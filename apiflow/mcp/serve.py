"""``apiflow world serve --mcp``: one trial served to an MCP agent, graded and written like any other.

The trial is the runner's (``apiflow.runner.play_trial``; ``AgentBridge`` is its model); the MCP
server runs beside it in the same event loop. The record goes to ``OUT/<slug>/<task>-t1.json``, the layout of ``apiflow run``,
with the run id ``apiflow run`` would give the same task, seed and model.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from apiflow.agent.ids import run_id_for
from apiflow.agent.loop import TrialLimits
from apiflow.agent.prompts import initial_messages
from apiflow.bank import Bank
from apiflow.bank.task import Task
from apiflow.mcp.bridge import AgentBridge
from apiflow.mcp.server import build_server
from apiflow.mcp.transports import http_endpoint, serve_stdio
from apiflow.models.base import ModelClient
from apiflow.models.registry import model_slug
from apiflow.results.record import TrialRecord
from apiflow.runner import Run, play_trial

Transport = Literal["stdio", "http"]
SERVE_MODEL = "external/mcp"
"""The model name (``model_api``) of a trial served with ``world serve --mcp``."""
_LINGER_S = 5.0
"""How long the server stays up after the trial for the agent to read its last results and leave."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """One served trial's settings (the ``world serve --mcp`` flags)."""

    transport: Transport = "stdio"
    port: int = 0
    seed: int = 0
    out: Path = Path("results")
    model: str = SERVE_MODEL
    limits: TrialLimits = TrialLimits()


async def serve_trial(bank: Bank, task: Task, options: ServeOptions) -> tuple[TrialRecord, Path]:
    """Serve ``task`` to one MCP agent until the trial ends; return its record and where it went."""
    bridge = AgentBridge(options.model, initial_messages(task))
    server = build_server(bridge)
    trial = first_trial(
        bank, task, bridge, slug=model_slug(options.model), seed=options.seed, limits=options.limits
    )
    if options.transport == "stdio":
        serving = asyncio.create_task(serve_stdio(server, bridge))
        record = await trial
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(serving), _LINGER_S)  # the agent leaving ends it
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    else:
        async with http_endpoint(server, options.port) as url:
            _note(
                f"serving the MCP trial of {task.id} at {url} (streamable HTTP); ends when the agent calls finish"
            )
            record = await trial
            await asyncio.sleep(min(_LINGER_S, 1.0))  # the last responses are already on their way
    path = write_record(record, options.out)
    _note(f"{task.id}: {record.verdict or '-'} {record.apiflow.termination.value} -> {path}")
    return record, path


async def first_trial(
    bank: Bank, task: Task, model: ModelClient, *, slug: str, seed: int = 0, limits: TrialLimits | None = None
) -> TrialRecord:
    """Epoch 1 of ``task`` with ``model``, as ``apiflow run --task TASK`` runs it (same run id)."""
    run = Run(bank, run_id_for(bank.hash, slug, [task.id], 1, seed), seed, limits)
    return await play_trial(run.spec(task, 1, slug), model)


def write_record(record: TrialRecord, out: Path) -> Path:
    """Write a record where ``apiflow run`` writes it (``OUT/<model>/<task>-t<trial>.json``)."""
    path = out / record.model / f"{record.task_id}-t{record.trial}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(record.to_json(), encoding="utf-8")
    return path


def _note(text: str) -> None:
    # stderr: on the stdio transport stdout is the MCP channel.
    print(text, file=sys.stderr, flush=True)
