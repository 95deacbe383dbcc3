"""A short Python API for notebooks: run trials, get a table back.

::

    import apiflow

    table = apiflow.run_task("apiflow/oracle", "sample-w01-sub01")          # one trial
    table = apiflow.run_trials(["apiflow/oracle", "apiflow/sim:weak"], epochs=3)  # a small grid
    table = apiflow.run_grid("configs/grids/demo.yaml", out="results/demo")  # a real grid (Ray)
    df = table.to_pandas()                                                   # if pandas is installed

Every function returns a pyarrow Table with the grid's row schema (``apiflow.results.rows.ROW_SCHEMA``:
one row per trial, the same columns ``apiflow grid run`` stores and ``apiflow report`` reads).
``run_task``/``run_trials`` run in this process, like ``apiflow run`` (no Ray); ``run_grid`` runs
``apiflow grid run`` as a child process (apiflow never imports Ray itself) and reads the stored rows.
All of them work inside a notebook's own event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import subprocess
import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

from apiflow.agent.ids import run_id_for
from apiflow.agent.loop import TrialLimits
from apiflow.agent.replay import replay_for
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.errors import UsageError
from apiflow.models import GenerateConfig, check_model_name, model_prices, model_slug
from apiflow.models.registry import price_source
from apiflow.results.canary_key import CanaryKey
from apiflow.results.prices import DEFAULT_PRICE_TABLE, load_price_table
from apiflow.results.record import TrialRecord
from apiflow.results.rows import record_to_row, rows_to_table
from apiflow.runner import Run, TrialPlan

ALL_TASKS = "all"
NOTEBOOK_PANEL = "notebook"
"""The ``panel`` column of in-process rows (a grid's rows carry the grid's name)."""

T = TypeVar("T")


def run_task(
    model: str,
    task: str,
    *,
    epochs: int = 1,
    seed: int = 0,
    bank: str | Path = DEFAULT_BANK,
    params: dict[str, Any] | None = None,
    limits: TrialLimits | None = None,
    canary_key: CanaryKey | None = None,
) -> pa.Table:
    """Run ``epochs`` trials of one task with one model, in this process; one row per trial."""
    return run_trials(
        [model], [task], epochs=epochs, seed=seed, bank=bank, params=params, limits=limits,
        canary_key=canary_key,
    )  # fmt: skip


def run_trials(
    models: str | Sequence[str],
    tasks: str | Sequence[str] = ALL_TASKS,
    *,
    epochs: int = 1,
    seed: int = 0,
    bank: str | Path = DEFAULT_BANK,
    params: dict[str, Any] | None = None,
    limits: TrialLimits | None = None,
    config: GenerateConfig | None = None,
    prices: str | Path = DEFAULT_PRICE_TABLE,
    records: list[TrialRecord] | None = None,
    canary_key: CanaryKey | None = None,
) -> pa.Table:
    """A small grid in this process: every model × task × epoch, one row per trial.

    Args:
        models: Model names (``apiflow/oracle``, a plug-in's ``prefix/model``, a litellm id...).
        tasks: Task ids of the bank, or ``"all"``.
        epochs: Trials per model and task.
        seed: Base seed (as ``apiflow run --seed``): same seed, bank and offline model, same rows.
        bank: Bank folder.
        params: Provider/plug-in parameters for every model (``api_base``...).
        limits: Trial limits (default: 500 messages, 1,800 s).
        config: Generation parameters (temperature, max_tokens, extra).
        prices: Price table for ``cost_usd``, each call priced apart (plug-ins without an entry: their own
            price, else free).
        records: If given, every trial's full record is appended to it (messages, grading).
        canary_key: A secret canary key (``apiflow.results.canary_key``: ``CanaryKey.new()``, or a
            results folder's ``folder_key``) for canary forms no released record predicts; None
            (the default) derives them from the seed alone, as ``apiflow run --canary-key none``.

    Raises:
        UsageError: Unknown model or task, bad bank, ``epochs`` < 1.
    """
    names = [models] if isinstance(models, str) else list(models)
    if not names:
        raise UsageError("no model given")
    if epochs < 1:
        raise UsageError(f"epochs must be at least 1, got {epochs}")
    for name in names:
        check_model_name(name)
    loaded = load_bank(bank)
    ids = [tasks] if isinstance(tasks, str) else list(tasks)
    chosen = (
        list(loaded.tasks.values()) if ids == [ALL_TASKS] else [loaded.task(t) for t in dict.fromkeys(ids)]
    )
    table = load_price_table(prices)

    replay = replay_for(names)  # world answers and grades shared by the call's trials, offline models only

    async def play() -> list[dict[str, Any]]:
        rows = []
        for name in names:
            slug = model_slug(name)
            price = model_prices(table, slug, name)
            source = price_source(table, slug, name) if price is not None else table.version
            run = Run(
                loaded, run_id_for(loaded.hash, slug, [t.id for t in chosen], epochs, seed), seed, limits,
                config, params, replay, canary_key, price,
            )  # fmt: skip
            trials = [TrialPlan(name, task, epoch) for epoch in range(1, epochs + 1) for task in chosen]
            async for record in run.play(trials):  # priced by the run, call by call
                rows.append(record_to_row(record, panel=NOTEBOOK_PANEL, price_table=source))
                if records is not None:
                    records.append(record)
        return rows

    return rows_to_table(_run_coroutine(play()))


def run_grid(
    grid: str | Path,
    *,
    out: str | None = None,
    budget_usd: float | None = None,
    address: str | None = None,
    timeout_s: float | None = None,
) -> pa.Table:
    """Run (or resume) a grid YAML with ``apiflow grid run`` and return its stored rows.

    The grid runs in a child process (a private local Ray unless ``address``/``RAY_ADDRESS``
    says otherwise), exactly as on the command line; the returned table is every stored trial
    of the grid's output, this run's and earlier ones'.

    Raises:
        UsageError: The grid could not run (the runner's own one-line error, or its exit status).
    """
    command = [sys.executable, "-m", "apiflow.cli", "grid", "run", str(grid), "--no-progress"]
    for flag, value in (("--out", out), ("--budget-usd", budget_usd), ("--address", address)):
        if value is not None:
            command += [flag, str(value)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode not in (0, 3):  # 3: incomplete (budget, stall), its rows are still results
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"grid {grid} failed (exit {done.returncode}): {last}")
    return load_grid_rows(out or _grid_out(grid))


def load_grid_rows(out: str, storage_options: dict[str, Any] | None = None) -> pa.Table:
    """Every stored trial row of a grid's output (folder or ``s3://``), one per trial id."""
    from apiflow.results.store import ResultStore

    store = ResultStore(out, storage_options)
    if store.read_manifest() is None:
        raise UsageError(f"{out} holds no grid (no manifest.json)")
    return store.read_rows()


def _grid_out(grid: str | Path) -> str:
    import yaml

    data = yaml.safe_load(Path(grid).read_text()) or {}
    return str(data.get("out") or "results/grid")


def _run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion, also from inside a running event loop (a notebook's):
    then on a private loop in a worker thread, since a running loop cannot be re-entered."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
