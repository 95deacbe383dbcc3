"""The real-model bench's grid (``bench_realmodel.py``): sample-bank trials played one after another
through the real provider path (``LiteLLMClient`` -> litellm's ``openai/`` route with ``api_base`` ->
HTTP), as ``apiflow run`` does, and what they measured: verdicts, endings, harness outcomes, tokens,
nominal cost and the wall time of each model call."""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiflow.agent import TrialLimits, TrialSpec
from apiflow.agent.ids import run_id_for, trial_seed
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import GenerateConfig, ModelOutput, make_model, model_slug
from apiflow.results.prices import cost_usd, load_price_table
from apiflow.results.record import TrialRecord
from apiflow.runner import play_trial

ROOT = Path(__file__).resolve().parents[1]

MODEL_ALIAS = "smollm2-135m-instruct"
MODEL_ID = f"openai/{MODEL_ALIAS}"
PRICES = ROOT / "configs" / "prices" / "local-2026-12.yaml"


class TimedModel:
    """A ``ModelClient`` wrapper that records the wall time of each ``generate`` (one model call)."""

    def __init__(self, inner: Any, seconds: list[float]) -> None:
        self.inner, self.seconds = inner, seconds
        self.model_api = inner.model_api

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        started = time.perf_counter()
        try:
            return await self.inner.generate(messages, tools, config)
        finally:
            self.seconds.append(time.perf_counter() - started)


def ending(record: TrialRecord) -> str:
    """How a trial ended: its termination, with the limit's name when a limit ended it
    (``limit/context_window`` and ``limit/messages`` call for different fixes)."""
    a = record.apiflow
    return f"{a.termination.value}/{a.limit}" if a.limit else a.termination.value


@dataclass
class GridReport:
    """What one real-model grid measured."""

    trials: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    terminations: dict[str, int] = field(default_factory=dict)
    harness_outcomes: int = 0
    model_calls: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    price_table: str = ""
    call_seconds: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    harness_errors: list[str] = field(default_factory=list)
    server_died: str = ""
    """Why the server was gone after a trial (the grid stops there); empty while it ran."""

    def add(self, record: TrialRecord) -> None:
        a = record.apiflow
        self.trials += 1
        self.verdicts[record.verdict or "-"] = self.verdicts.get(record.verdict or "-", 0) + 1
        self.terminations[ending(record)] = self.terminations.get(ending(record), 0) + 1
        self.model_calls += a.model_calls
        for kind, count in a.tokens.model_dump().items():
            self.tokens[kind] = self.tokens.get(kind, 0) + count
        self.cost_usd = round(self.cost_usd + (a.cost_usd or 0.0), 9)
        if record.is_harness_outcome:
            self.harness_outcomes += 1
            self.harness_errors.append(f"{record.task_id}: {a.harness_error}")


def run_grid(
    api_base: str,
    task_ids: list[str],
    epochs: int,
    *,
    max_tokens: int = 256,
    max_messages: int = 24,
    max_seconds: float = 3600.0,
    server_died: Any = None,
) -> GridReport:
    """Run ``task_ids`` x ``epochs`` against the server at ``api_base`` and measure them.

    ``max_tokens`` caps each reply and ``max_messages`` each trial to keep conversations inside the
    model's context; one that outgrows it ends ``limit``/``context_window``, the model's own limit.
    The reply cap does not hold everywhere: with ``tool_choice: auto`` llama-cpp-python's
    ``chatml-function-calling`` handler generates with ``max_tokens=None`` (until its grammar stops
    or the context is full), so a turn of many tool calls can run long.
    ``max_seconds`` bounds each trial, and each call may take as long (the client timeout): the
    server answers one request at a time and cannot cancel one, so a call a trial abandons at its
    time limit still delays the next trial's first call; a shorter client timeout would turn a
    loaded machine's slowness into provider errors.
    ``server_died`` (``LlamaServer.died``) is asked after each trial: once the server is gone every
    later trial would only add a ``Connection error``, so the grid stops and says why.
    """
    from apiflow.models.litellm_client import configure_litellm

    configure_litellm()
    bank = load_bank(DEFAULT_BANK)
    table = load_price_table(PRICES)
    prices = table.price(MODEL_ID)
    slug = model_slug(MODEL_ID)
    run_id = run_id_for(bank.hash, slug, task_ids, epochs, 0)
    limits = TrialLimits(max_messages=max_messages, max_seconds=max_seconds)
    # Greedy, so reruns compare. llama-cpp-python's tool handler renders the tools into the prompt
    # only when the request names a tool_choice; without one the model never sees them.
    config = GenerateConfig(temperature=0.0, max_tokens=max_tokens, extra={"tool_choice": "auto"})
    params = {"api_base": api_base, "api_key": "sk-local", "timeout": max_seconds}
    report, seconds = GridReport(price_table=f"{table.version} ({table.hash[:12]})"), list[float]()

    async def run_all() -> None:
        for epoch in range(1, epochs + 1):
            for task_id in task_ids:
                task = bank.task(task_id)
                model = TimedModel(make_model(MODEL_ID, task, trial_seed(0, task.id, epoch), params), seconds)
                record = await play_trial(
                    TrialSpec(
                        task=task,
                        world=bank.world_of(task),
                        seed=0,
                        epoch=epoch,
                        bank_name=bank.name,
                        bank_hash=bank.hash,
                        run_id=run_id,
                        limits=limits,
                        model_slug=slug,
                        config=config,
                    ),
                    model,
                )
                record.apiflow.cost_usd = cost_usd(record.apiflow.tokens, prices)
                report.add(record)
                print(f"  {task_id}-t{epoch}  {record.verdict or '-'}  {ending(record)}  "
                      f"calls={record.apiflow.model_calls}  tokens={record.tokens.total}  "
                      f"{record.duration_s:.1f}s", flush=True)  # fmt: skip
                if server_died is not None and (cause := server_died()) is not None:
                    report.server_died = f"after {task_id}-t{epoch} ({cause})"
                    return

    started = time.perf_counter()
    asyncio.run(run_all())
    report.wall_s = round(time.perf_counter() - started, 2)
    if seconds:
        ordered = sorted(seconds)
        report.call_seconds = {
            "calls": len(ordered),
            "mean": round(statistics.fmean(ordered), 3),
            "median": round(statistics.median(ordered), 3),
            "p90": round(ordered[math.ceil(0.9 * len(ordered)) - 1], 3),  # nearest rank
            "max": round(ordered[-1], 3),
        }
    return report


def sample_task_ids(count: int) -> list[str]:
    """The first ``count`` tasks of the sample bank, solo tasks first (shorter conversations)."""
    tasks = sorted(load_bank(DEFAULT_BANK).tasks.values(), key=lambda t: (t.kind != "solo", t.id))
    return [t.id for t in tasks[:count]]
