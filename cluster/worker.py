"""Trial workers: run planned trials (fresh world each), grade locally, store results themselves.

``TrialRunner`` is plain asyncio (the in-process baseline of the benchmark and the unit of the
tests); ``TrialWorker`` is the async Ray actor around it. Only small ``TrialOutcome``s travel
back to the driver: transcripts go straight from the worker to the store.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from dataclasses import dataclass
from typing import Any

from apiflow.agent import TrialSpec, trial_seed
from apiflow.agent.heap import settle_loaded
from apiflow.agent.replay import replay_for
from apiflow.analysis.outcomes import kind_of
from apiflow.bank import Bank, load_bank
from apiflow.errors import UsageError
from apiflow.models import GenerateConfig, make_model, model_prices, uses_litellm
from apiflow.models.caching import limit_counts_cache_reads
from apiflow.models.plugins import FREE, BrokenModel
from apiflow.models.registry import price_source
from apiflow.models.retry import RetryPolicy, retry_hook
from apiflow.results.batch_journal import BatchJournal
from apiflow.results.canary_key import FOLDER, folder_key
from apiflow.results.prices import STANDARD, Prices, PriceTable, load_price_table
from apiflow.results.record import TrialRecord
from apiflow.results.rows import record_to_row
from apiflow.results.store import ResultStore
from apiflow.runner import play_trial
from cluster.batching import BatchTiers
from cluster.budget import BudgetedModel
from cluster.plan import PlannedTrial, trial_limits
from cluster.ratelimit import ActorCallGate
from cluster.spec import GridModel, GridSpec


@dataclass(frozen=True, slots=True)
class TrialOutcome:
    """What the driver learns about one trial (the record itself stays in the store)."""

    trial_id: str
    model_index: int
    stored: bool
    """False when another attempt had already stored this trial (a re-queued duplicate)."""
    passed: bool | None
    harness: bool
    termination: str
    cost_usd: float
    retries: int
    fault: str = ""
    """For a harness outcome, the fault class its record names (``QuotaExhausted``, ``RateLimitError``)."""


def service_tier(model: GridModel) -> str:
    """The tier a model's calls are asked (and priced) at: its ``tier`` (``batch``; OpenAI's ``flex``
    / ``priority``, passed on as ``service_tier``), else its ``params.service_tier``, else standard.
    A call the provider served at another tier is priced at that one (``ModelOutput.tier``)."""
    if model.tier != STANDARD:
        return model.tier
    tier = str(model.params.get("service_tier") or STANDARD)
    return STANDARD if tier in ("default", "auto") else tier  # OpenAI's names for the standard tier


def price_for(table: PriceTable, model: GridModel) -> Prices:
    """A grid model's prices: by its slug, else by its model id (litellm ids are table aliases),
    else a plug-in's own (declared, or free)."""
    prices = model_prices(table, model.slug, model.model, service_tier(model))
    if prices is None:
        raise UsageError(f"price table {table.version} has no price for {model.slug!r} ({model.model})")
    return prices


def _worker_price(table: PriceTable, model: GridModel) -> Prices:
    # The driver priced every model before starting us; a model this node cannot price is one it
    # cannot build either (a plug-in missing here), whose trials end as harness errors at no cost.
    try:
        return price_for(table, model)
    except UsageError:
        return FREE


def _worker_price_source(table: PriceTable, model: GridModel) -> str:
    # As ``_worker_price``: a plug-in missing on this node fails its trials, not the actor.
    try:
        return price_source(table, model.slug, model.model, service_tier(model))
    except UsageError:
        return table.version


def load_checked_bank(spec: GridSpec) -> Bank:
    """The grid's bank, refusing one whose hash differs from the pinned ``bank_hash``.

    Through the parsed-bank cache (``apiflow.bank.cache``): the driver parses a bank once per
    machine and code version, every worker process then unpickles it, a fraction of the parse
    (docs/results/042-result-store-measurements.md).
    """
    bank = load_bank(spec.bank, cache=True)
    if spec.bank_hash and spec.bank_hash != bank.hash:
        raise UsageError(f"bank {spec.bank} has hash {bank.hash[:12]}…, the grid pins {spec.bank_hash[:12]}…")
    return bank


class TrialRunner:
    """Runs planned trials of one grid in this process.

    Args:
        spec: The grid (paths already absolute).
        run_id: The run id recorded on every trial.
        gates: Provider key -> ``ProviderGate`` actor handle.
        ledger: ``BudgetLedger`` handle, or None without a budget.
    """

    def __init__(self, spec: GridSpec, run_id: str, gates: dict[str, Any] | None = None, ledger: Any = None):
        self.spec = spec
        self.run_id = run_id
        self.bank = load_checked_bank(spec)
        self.store = ResultStore(spec.out, spec.storage_options, spec.row_format)
        self.prices = load_price_table(spec.price_table)
        self.model_prices = [_worker_price(self.prices, m) for m in spec.models]
        # Where each model's prices came from, for the row (the table version when the table prices it).
        self.price_sources = [_worker_price_source(self.prices, m) for m in spec.models]
        self.limits = trial_limits(spec)
        self.gates = gates or {}
        self.ledger = ledger
        self.policy = RetryPolicy(**spec.retry.model_dump())
        self.remote_store = not self.store.local
        self.slots = asyncio.Semaphore(spec.concurrency.trials_per_actor)
        self.cpu = BatchCpu()
        # One per actor for the run: shared by the trials this actor plays, offline grids only.
        self.replay = replay_for(m.model for m in spec.models)
        # The output's secret canary key: the driver made it before starting us (made here when a
        # runner plays a grid alone); it comes from the store, never through Ray.
        self.canary_key = folder_key(self.store.objects) if spec.canary_key == FOLDER else None
        self.batching = BatchTiers(spec, BatchJournal(self.store.objects))

    def _model(self, grid_model: GridModel, index: int, planned: PlannedTrial) -> Any:
        task = self.bank.task(planned.task_id)
        params = grid_model.params
        if grid_model.tier in ("flex", "priority"):
            params = {**params, "service_tier": grid_model.tier}
        try:
            model = make_model(
                grid_model.model, task, trial_seed(planned.seed, task.id, planned.epoch), params
            )
        except UsageError as exc:
            # The driver checked the name; failing here means this node lacks what the driver has
            # (a plug-in not installed on it): the trial is a harness error, retried on resume.
            return BrokenModel(grid_model.model, f"cannot build {grid_model.model} on this worker: {exc}")
        if uses_litellm(grid_model.model):  # plug-ins and external agents bring their own transport
            gate = self.gates.get(grid_model.provider)
            call_gate = (  # the batch tier's turns are not the synchronous requests the gate limits
                ActorCallGate(gate, counts_cache_reads=limit_counts_cache_reads(grid_model.model))
                if gate is not None and grid_model.tier != "batch"
                else None
            )
            model.retry = retry_hook(self.policy, call_gate)  # type: ignore[attr-defined]
            if grid_model.tier == "batch":
                model.batch = self.batching.wire(index, planned.trial_id)  # type: ignore[attr-defined]
        if self.ledger is not None:
            model = BudgetedModel(model, self.ledger, self.model_prices[index], planned.trial_id)
        return model

    async def run_one(self, planned: PlannedTrial) -> TrialOutcome:
        """Run, grade, price and store one trial alone (skipped if already stored)."""
        grid_model = self.spec.models[planned.model_index]
        if await self._call_store(self.store.is_done, grid_model.slug, planned.trial_id):
            return already_stored(planned)
        record, row = await self._play(planned)
        stored = await self._call_store(self.store.put_trial, record, row)
        return _outcome(planned, record, stored)

    async def _play(self, planned: PlannedTrial) -> tuple[TrialRecord, dict[str, Any]]:
        """Run, grade and price one trial; its record and flat row (nothing stored)."""
        grid_model = self.spec.models[planned.model_index]
        task = self.bank.task(planned.task_id)
        async with self.slots:
            spec = TrialSpec(
                task=task, world=self.bank.world_of(task), seed=planned.seed, epoch=planned.epoch,
                bank_name=self.bank.name, bank_hash=self.bank.hash, run_id=self.run_id, limits=self.limits,
                model_slug=grid_model.slug,
                config=GenerateConfig(grid_model.temperature, grid_model.max_tokens, dict(grid_model.extra)),
                trial_id=planned.trial_id,  # the planner's id is the storage key (it also covers params)
                canary_key=self.canary_key,
                prices=self.model_prices[planned.model_index],  # the record's cost, priced call by call
            )  # fmt: skip
            record = await play_trial(
                spec, self._model(grid_model, planned.model_index, planned), self.replay
            )
        row = record_to_row(record, panel=self.spec.name, price_table=self.price_sources[planned.model_index])
        return record, row

    async def run_stored_batch(self, batch: list[PlannedTrial]) -> list[TrialOutcome]:
        """Run a batch of offline trials and commit their rows as ONE create-only object.

        No per-trial "already stored?" check: the driver sends only trials without a row, and
        re-sends a dead actor's batch only after asking the store what that batch committed.
        """
        began = time.process_time()
        played = [await self._play(p) for p in batch]  # offline trials are CPU: one after another
        played_at = time.process_time()
        ids = [p.trial_id for p in batch]
        created = await self._call_store(self.store.put_batch, ids, played)
        self.cpu.add(len(batch), played_at - began, time.process_time() - played_at)
        if created:
            return [_outcome(p, record, True) for p, (record, _) in zip(batch, played, strict=True)]
        # Another attempt of this very batch committed first (an actor of a killed driver that
        # outlived it, or one the driver thought lost): what it holds is stored; a trial it
        # lacks (its harness outcome there) stays unstored here and runs again on resume.
        found = await self._call_store(self.store.batch_ids, ids)
        return [
            already_stored(p) if p.trial_id in found else _outcome(p, record, record.is_harness_outcome)
            for p, (record, _) in zip(batch, played, strict=True)
        ]

    async def _call_store(self, fn: Any, *args: Any) -> Any:
        # Object-store calls block on the network: keep them off the event loop. Local writes
        # are a few syscalls, cheaper inline than a thread hop.
        if self.remote_store:
            return await asyncio.to_thread(fn, *args)
        return fn(*args)

    async def run_batch(self, batch: list[PlannedTrial]) -> list[TrialOutcome]:
        """Run planned trials, outcomes in batch order.

        Provider trials run concurrently (bounded by ``trials_per_actor``), each committed by its
        own row; offline trials run in storage batches of ``concurrency.batch``, each committed by
        one batch object (docs/design/042-result-store.md, "Batched rows"). A batch the driver
        sent is one storage batch (it is never longer than ``concurrency.batch``).
        """
        offline = [p for p in batch if self.spec.models[p.model_index].offline]
        if len(offline) < 2:
            offline = []
        batched = {p.trial_id for p in offline}
        alone = [p for p in batch if p.trial_id not in batched]
        size = self.spec.concurrency.batch

        async def in_batches() -> list[TrialOutcome]:
            outcomes: list[TrialOutcome] = []
            for start in range(0, len(offline), size):
                chunk = offline[start : start + size]
                outcomes.extend(
                    await self.run_stored_batch(chunk) if len(chunk) > 1 else [await self.run_one(chunk[0])]
                )
            return outcomes

        singles, grouped = await asyncio.gather(
            asyncio.gather(*(self.run_one(p) for p in alone)), in_batches()
        )
        by_id = {o.trial_id: o for o in (*singles, *grouped)}
        return [by_id[p.trial_id] for p in batch]


@dataclass(slots=True)
class BatchCpu:
    """Process CPU a runner spent on its offline batches: playing the trials (run, grade, price,
    row) and storing them (transcripts, batch object). Measured per batch with
    ``time.process_time`` around sequential code, so it is exact for offline batches; what the
    actor's process spent beyond it is Ray, dispatch and (de)serialisation."""

    trials: int = 0
    play_s: float = 0.0
    store_s: float = 0.0

    def add(self, trials: int, play_s: float, store_s: float) -> None:
        self.trials += trials
        self.play_s += play_s
        self.store_s += store_s


def stored_in_batches(spec: GridSpec, batch: list[PlannedTrial]) -> bool:
    """True when this batch is committed as one batch object: two or more trials, all offline
    (a provider trial takes minutes and may cost money: its own row, checked before it runs)."""
    return len(batch) > 1 and all(spec.models[p.model_index].offline for p in batch)


def already_stored(planned: PlannedTrial) -> TrialOutcome:
    return TrialOutcome(planned.trial_id, planned.model_index, False, None, False, "already_stored", 0.0, 0)


def _outcome(planned: PlannedTrial, record: TrialRecord, stored: bool) -> TrialOutcome:
    block = record.apiflow
    return TrialOutcome(
        trial_id=planned.trial_id,
        model_index=planned.model_index,
        stored=stored,
        passed=record.passed,
        harness=record.is_harness_outcome,
        termination=str(block.termination),
        cost_usd=block.cost_usd or 0.0,
        retries=len(block.retries),
        fault=kind_of(block.harness_error) if record.is_harness_outcome else "",
    )


class GcPauses:
    """Wall time this process spent in the cyclic garbage collector (``gc.callbacks``), per generation.

    A full collection walks every tracked object; in an actor holding the bank, litellm and
    hundreds of open trials one took about a second, with the event loop (every trial) stopped.
    """

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self.longest_s = 0.0
        self._began = 0.0
        gc.callbacks.append(self._observe)

    def _observe(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
            return
        took = time.perf_counter() - self._began
        self.seconds[info["generation"]] += took
        self.count[info["generation"]] += 1
        self.longest_s = max(self.longest_s, took)


def thread_cpu_s(loop_tid: int | None = None) -> dict[str, float]:
    """CPU seconds (user + system) this process's live threads have used, summed by thread name.

    Splits an actor's CPU between its asyncio event loop (``loop_tid``: where trials, litellm and
    the actor's methods run), the process's main thread and Ray's core-worker threads (gRPC,
    the task-event buffer, object transfers), which carry the process title they were started
    under (``ray::IDLE`` and the like). Linux only (``/proc``); elsewhere empty.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    spent: dict[str, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return spent
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                line = stat.read()
        except OSError:  # the thread ended between the listing and the read
            continue
        # comm is in parentheses and may hold spaces; utime and stime follow at fields 14 and 15
        name = line[line.index("(") + 1 : line.rindex(")")]
        fields = line[line.rindex(")") + 2 :].split()
        if int(tid) == loop_tid:
            name = "event loop"
        elif int(tid) == os.getpid():
            name = "main"
        spent[name] = spent.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return spent


FULL_COLLECTION_EVERY = 100
"""Middle-generation collections between two full ones (CPython's default: 10). An actor's open
trials live for a provider's whole latency, so they all reach the oldest generation and every
full collection walks them (for a second or so with hundreds open: docs/results/issue24-house.md,
"Figures moved out of code comments"): ten times fewer of them. Cycles that reach the
oldest generation wait longer to be freed; what is acyclic is freed by reference counting as
before."""


def settle_heap(spec: GridSpec) -> None:
    """Load what every trial will use, then move the whole heap out of the collector's sight.

    litellm is imported on the first provider call otherwise, after which its hundreds of
    thousands of long-lived objects are walked by every full collection. ``gc.freeze`` puts
    what exists now (bank, prices, modules) in the permanent generation: later full collections
    walk only what trials create.
    """
    if any(uses_litellm(m.model) for m in spec.models):
        from apiflow.models.litellm_client import configure_litellm

        configure_litellm()
    settle_loaded()
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
