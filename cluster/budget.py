"""The budget ledger: admit whole trials by their expected cost, in the planned order; bill every call.

A trial once started runs to its end: stopping it half way throws away what it already cost and
reruns it from scratch on resume. So the cap is kept at admission: a trial starts only when the
spend so far, plus what the trials in flight are still expected to cost, plus its own expected cost
fits under the cap (``Ledger.admit``). The expected cost of a trial is its model's token profile
for the task's kind and length, priced (``cluster.estimate``), corrected by what that model's
finished trials actually cost against their expectation. The driver asks in the planned order and
stops at the first trial that does not fit, so a budget cut short leaves a sample balanced over
models and worlds rather than the cheap model's trials only.

The cap can therefore be overshot, only by trials that were in flight and cost more than expected:
at most (trials in flight) x (the dearest trial's cost beyond its expectation). The summary states
the overshoot that happened (docs/design/040-grid-runner.md, "Budget").

The cap is the grid's, not one invocation's: a resumed driver starts its ledger from the spend
already on record (``spend_on_record``: every stored row and failure row, plus what the last
driver's checkpoint saw spent by trials that stored nothing), so a driver killed and rerun
cannot spend the cap again (docs/design/044-chaos-suite.md).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from apiflow.models.base import GenerateConfig, ModelClient, ModelOutput
from apiflow.results.prices import Prices, call_cost_usd

PRIOR_TRIALS = 2.0
"""How many trials' worth of weight a model's published profile keeps against its observed costs."""

GUESS_TRIALS = 0.25
"""The same for a model the published corpus lacks: its expectation is the panel's mean over models,
a guess that its first trials should overrule."""

Admission = tuple[str, int, float]
"""(trial id, model index, the trial's expected cost from its model's profile) as the driver asks."""


@dataclass
class _Held:
    model: int
    expected: float
    spent: float = 0.0


@dataclass
class LedgerState:
    """Money in USD: the cap, what is billed, how the trials went."""

    cap: float
    spent: float = 0.0
    admitted: int = 0
    refused: int = 0
    closed: bool = False
    unstored: float = 0.0
    """Billed to trials that ended without a stored row (provider faults, harness errors)."""
    observed: dict[int, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0.0]))
    """Per model: [actual cost, expected cost] summed over its finished trials."""


class Ledger:
    """Pure ledger logic (the actor wraps it)."""

    def __init__(self, cap_usd: float, spent_usd: float = 0.0, guessed: frozenset[int] = frozenset()) -> None:
        """``guessed``: the model indexes whose expectations are the panel's guess (not in the corpus)."""
        self.state = LedgerState(cap=cap_usd, spent=spent_usd)
        self._held: dict[str, _Held] = {}
        self._finished: dict[int, int] = defaultdict(int)
        self._guessed = guessed

    def ratio(self, model: int) -> float:
        """What this model's finished trials cost against their expectation, pulled toward 1 by a
        prior of its mean expectation (``PRIOR_TRIALS``, or ``GUESS_TRIALS`` for a guessed model).
        A guessed model with no finished trial yet takes the ratio of the other guessed models."""
        observed, n = self.state.observed, self._finished
        if not n.get(model) and model in self._guessed:
            peers = [m for m in self._guessed if n.get(m)]
            actual, expected = sum(observed[m][0] for m in peers), sum(observed[m][1] for m in peers)
            count, weight = sum(n[m] for m in peers), GUESS_TRIALS
        else:
            (actual, expected), count = observed[model], n.get(model, 0)
            weight = GUESS_TRIALS if model in self._guessed else PRIOR_TRIALS
        prior = weight * (expected / count if count else 0.0)
        return (actual + prior) / (expected + prior) if expected + prior > 0 else 1.0

    def committed(self) -> float:
        """Billed so far plus what the trials in flight are still expected to cost."""
        owed = sum(max(h.expected * self.ratio(h.model) - h.spent, 0.0) for h in self._held.values())
        return self.state.spent + owed

    def admit(self, trials: list[Admission]) -> int:
        """Admit a prefix of ``trials`` (in the planned order); how many. A refusal with nothing in
        flight closes the ledger: no trial can finish to make room."""
        s = self.state
        if s.closed:
            return 0
        committed = self.committed()
        for count, (key, model, expected) in enumerate(trials):
            cost = expected * self.ratio(model)
            if committed + cost > s.cap:
                s.refused += 1
                if not self._held:
                    s.closed = True
                return count
            committed += cost
            self._held[key] = _Held(model, expected)
            s.admitted += 1
        return len(trials)

    def charge(self, key: str, actual_usd: float) -> None:
        """Bill one call of trial ``key``."""
        self.state.spent += actual_usd
        held = self._held.get(key)
        if held is not None:
            held.spent += actual_usd

    def finish(self, key: str, stored: bool) -> None:
        """Trial ``key`` ended: release what it still held, learn from what it cost."""
        held = self._held.pop(key, None)
        if held is None:
            return
        sums = self.state.observed[held.model]
        sums[0] += held.spent
        sums[1] += held.expected
        self._finished[held.model] += 1
        if not stored:
            self.state.unstored += held.spent

    @property
    def is_open(self) -> bool:
        return not self.state.closed

    def summary(self) -> dict[str, Any]:
        """The ledger as plain numbers (``reserved_usd``: still expected of the trials in flight)."""
        s = self.state
        return {"cap_usd": s.cap, "spent_usd": round(s.spent, 9), "reserved_usd": round(self.committed() - s.spent, 9),
                "in_flight": len(self._held), "admitted": s.admitted, "refused": s.refused, "closed": s.closed,
                "unstored_usd": round(s.unstored, 9), "overshoot_usd": round(max(s.spent - s.cap, 0.0), 9)}  # fmt: skip


@dataclass(frozen=True)
class SpendOnRecord:
    """What the store says was spent on a grid before this driver started.

    Attributes:
        rows_usd: Sum of ``cost_usd`` over stored rows (trials that completed).
        failures_usd: Sum over failure rows (every attempt that ended as a provider/harness outcome).
        unstored_usd: The latest driver checkpoint's spend by trials that had stored nothing yet
            (in flight, or killed with their driver): money gone that no row shows.
        objects: Row and failure objects read.
    """

    rows_usd: float
    failures_usd: float
    unstored_usd: float
    objects: int

    @property
    def total_usd(self) -> float:
        """The ledger's starting spend."""
        return self.rows_usd + self.failures_usd + self.unstored_usd


def spend_on_record(store: Any) -> SpendOnRecord:
    """Rebuild the spend a grid has on record (``store``: a ``ResultStore``).

    Rows and failure rows are the truth for finished attempts. What they cannot show is spend by
    attempts that never finished (their driver was killed): the driver checkpoints that figure
    (``unstored_usd``, which already carries forward every earlier attempt's) and the latest
    checkpoint is added. It may count a trial twice (in flight at the checkpoint, stored before
    the kill): the rebuild errs high, toward stopping early; what it can miss is the spend of
    calls still in flight at the kill and of calls settled after the last checkpoint.
    """
    rows_usd, failures_usd, objects = store.recorded_spend()
    checkpoints = store.read_checkpoints()
    latest = max(checkpoints, key=lambda c: (c.get("written_at", 0.0), c.get("attempt", "")), default=None)
    unstored = float(latest.get("unstored_usd", 0.0)) if latest else 0.0
    return SpendOnRecord(rows_usd, failures_usd, max(0.0, unstored), objects)


def checkpoint(
    attempt: str, ledger: dict[str, Any], base: SpendOnRecord, stored_usd: float
) -> dict[str, Any]:
    """The ledger checkpoint a driver writes every second or so.

    Args:
        attempt: This driver invocation's id.
        ledger: ``Ledger.summary()`` (its ``spent_usd`` started at ``base.total_usd``).
        base: The spend on record when this driver started.
        stored_usd: Spend of the trials this driver has seen stored (rows or failure rows).

    ``unstored_usd`` = what the ledger has settled minus what sits in rows: the spend a kill right
    now would leave without a row. Open reservations are not counted: they are worst cases
    (a whole ``max_tokens`` reply) and, counted whole at every kill, would close a budget long
    before it is spent; what a kill can hide is therefore bounded by the calls in flight (each at
    most its reservation) plus what settled since the last checkpoint.
    """
    in_rows = base.rows_usd + base.failures_usd + stored_usd
    return {"attempt": attempt, "written_at": time.time(), "cap_usd": ledger["cap_usd"],
            "spent_usd": ledger["spent_usd"], "reserved_usd": ledger["reserved_usd"],
            "unstored_usd": max(0.0, ledger["spent_usd"] - in_rows)}  # fmt: skip


class BudgetedModel:
    """A ``ModelClient`` whose every call is billed on the ledger, to the trial it belongs to.

    Args:
        inner: The model.
        ledger: The ``BudgetLedger`` actor handle.
        prices: This model's prices.
        key: The trial's id (what the driver admitted).
    """

    def __init__(self, inner: ModelClient, ledger: Any, prices: Prices, key: str) -> None:
        self.inner = inner
        self.model_api = inner.model_api
        self.ledger = ledger
        self.prices = prices
        self.key = key

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        output = await self.inner.generate(messages, tools, config)  # a failed call is not billed
        # One call's own price: its long-context rate when its prompt crossed the threshold, at its served tier.
        await self.ledger.charge.remote(self.key, call_cost_usd(output.usage, self.prices, output.tier))
        return output

    async def end_trial(self, messages: list[dict[str, Any]]) -> None:
        """Pass the end of the trial on to a model that drives it from outside (an MCP agent's
        bridge, ``apiflow.mcp.external``), so its agent process and server are released."""
        end = getattr(self.inner, "end_trial", None)
        if end is not None:
            await end(messages)
