"""Play a panel of offline models on every task of a bank, in process (``apiflow panel check``).

The trials are the ones ``apiflow run`` would record (same trial seeds, same grader); only the few
columns the panel statistics read are kept, so 44,365 trials fit in a small table. Calibrated
models are labelled with the published slug they were fitted to, so simulated and published rows
go through the same ``apiflow.analysis`` code and line up by name.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import Any

import pyarrow as pa

from apiflow.agent.replay import Replay, replay_for
from apiflow.bank.loader import Bank, load_bank
from apiflow.errors import UsageError
from apiflow.models.calibrated import CALIBRATED_PANEL
from apiflow.models.registry import check_model_name, model_slug
from apiflow.results.rows import ROW_SCHEMA, record_to_row
from apiflow.runner import Run, TrialPlan
from apiflow.runner.pool import in_worker, replay_pool

CALIBRATED_API = "apiflow/sim:calibrated-"

COLUMNS = ("model", "task_id", "epoch", "verdict", "harness", "g1_passed", "g2_passed", "abstained")
"""The row columns kept: what ``trials_from_table`` needs for rates, reach and failure classes."""

SCHEMA = pa.schema([ROW_SCHEMA.field(c) for c in COLUMNS])
"""Those columns as the result store types them."""


def label(model: str) -> str:
    """The row label of a model: the published slug for ``apiflow/sim:calibrated-<slug>``."""
    return model.removeprefix(CALIBRATED_API) if model.startswith(CALIBRATED_API) else model_slug(model)


@cache
def bank_at(path: str) -> Bank:
    """The bank at ``path``, loaded (and verified) once per process (every trial of the process reads it)."""
    return load_bank(path)


def play_epoch(
    bank_path: str, model: str, epoch: int, seed: int = 0, replay: Replay | None = None
) -> list[dict[str, Any]]:
    """Every task of the bank, one trial of one offline model in epoch ``epoch``: one row per trial
    (the unit the stability runs play and resume); ``replay``: the run's, shared by its trials."""
    bank = bank_at(bank_path)
    name = label(model)
    run = Run(bank, f"panel-check-{bank.hash[:12]}", seed, replay=replay)
    trials = [TrialPlan(model, task, epoch) for task in bank.tasks.values()]

    async def run_all() -> list[dict[str, Any]]:
        rows = []
        async for record in run.play(trials):
            row = record_to_row(record)
            rows.append({**{c: row[c] for c in COLUMNS}, "model": name})
        return rows

    return asyncio.run(run_all())


def play_model(
    bank_path: str, model: str, epochs: int, seed: int = 0, replay: Replay | None = None
) -> list[dict[str, Any]]:
    """Every task of the bank x ``epochs`` trials of one offline model, epoch by epoch."""
    return [row for epoch in range(1, epochs + 1) for row in play_epoch(bank_path, model, epoch, seed, replay)]



def play_panel(
    bank_path: str,
    models: Sequence[str] | None = None,
    epochs: int = 5,
    seed: int = 0,
    jobs: int = 1,
    log: Callable[[str], None] | None = None,
) -> pa.Table:
    """The panel's trials on a bank as one table (``COLUMNS``), models in the order given.

    ``models`` defaults to the calibrated panel. ``jobs`` > 1 plays models in worker processes
    (trials are CPU-bound Python); the rows do not depend on ``jobs``.

    Raises:
        UsageError: a bad bank or a model name that is not an offline model.
    """
    models = list(CALIBRATED_PANEL if models is None else models)
    for model in models:
        if not model.startswith("apiflow/"):  # checked first: a provider name would load litellm
            raise UsageError(f"a panel check plays offline models only, not {model!r}")
        check_model_name(model)
    bank_at(str(bank_path))  # a bad bank fails here, once, not in every worker
    start = time.monotonic()
    parts: list[list[dict[str, Any]]] = []

    def done(model: str, rows: list[dict[str, Any]]) -> None:
        parts.append(rows)
        if log:
            log(f"{label(model)}: {len(rows)} trials ({time.monotonic() - start:.0f} s)")

    if jobs <= 1:
        replay = replay_for(models)
        for model in models:
            done(model, play_model(str(bank_path), model, epochs, seed, replay))
    else:
        with replay_pool(jobs, models, preload=partial(bank_at, str(bank_path))) as pool:
            futures = [pool.submit(in_worker, play_model, str(bank_path), m, epochs, seed) for m in models]
            for model, future in zip(models, futures, strict=True):
                done(model, future.result())
    return pa.Table.from_pylist([r for rows in parts for r in rows], schema=SCHEMA)
