"""The budget ledger: reserve a call's worst case before it is made, settle the actual cost after.

Spend can exceed the cap only by what was reserved and then under-estimated, never by
unreserved calls: a call whose worst case does not fit in ``cap - spent - reserved`` is
refused (its trial ends as a provider outcome, retried by a later resume), and once a
refusal happened — or the room left is below one call's worst case — no new trial starts.

The cap is the grid's, not one invocation's: a resumed driver starts its ledger from the spend
already on record (``spend_on_record``: every stored row and failure row, plus what the last
driver's checkpoint saw spent by trials that stored nothing), so a driver killed and rerun
cannot spend the cap again (docs/design/044-chaos-suite.md).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

from apiflow.models.base import GenerateConfig, ModelClient, ModelOutput, ProviderError
from apiflow.results.prices import Prices, cost_usd


class BudgetReached(ProviderError):
    """A call could not be reserved: the trial stops as a provider outcome (never a model failure)."""


@dataclass
class LedgerState:
    """Money in USD: the cap, what is settled, what is reserved by calls in flight."""

    cap: float
    spent: float = 0.0
    reserved: float = 0.0
    refused: int = 0
    calls: int = 0
    closed: bool = False


class Ledger:
    """Pure ledger logic (the actor wraps it)."""

    def __init__(self, cap_usd: float, spent_usd: float = 0.0) -> None:
        self.state = LedgerState(cap=cap_usd, spent=spent_usd)
        self._open: dict[int, float] = {}
        self._ids = itertools.count(1)

    def reserve(self, worst_case_usd: float) -> int | None:
        """A ticket for a call costing at most ``worst_case_usd``, or None (and admission closes)."""
        s = self.state
        if s.spent + s.reserved + worst_case_usd > s.cap:
            s.refused += 1
            s.closed = True
            return None
        ticket = next(self._ids)
        self._open[ticket] = worst_case_usd
        s.reserved += worst_case_usd
        s.calls += 1
        return ticket

    def settle(self, ticket: int, actual_usd: float) -> None:
        """Replace a reservation by the call's actual cost."""
        s = self.state
        s.reserved -= self._open.pop(ticket)
        s.spent += actual_usd

    def admit(self, next_call_usd: float) -> bool:
        """May a new trial start? Not after a refusal, nor when one call's worst case no longer fits."""
        s = self.state
        if s.spent + s.reserved + next_call_usd > s.cap:
            s.closed = True
        return not s.closed

    def summary(self) -> dict[str, Any]:
        """The ledger as plain numbers."""
        s = self.state
        return {"cap_usd": s.cap, "spent_usd": round(s.spent, 9), "reserved_usd": round(s.reserved, 9),
                "in_flight": len(self._open), "calls": s.calls, "refused": s.refused, "closed": s.closed}  # fmt: skip


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


def worst_case_usd(prompt_tokens: int, max_tokens: int, prices: Prices) -> float:
    """A call's worst case: the whole prompt uncached, the whole output at the dearest output kind."""
    return (prompt_tokens * prices.input + max_tokens * max(prices.output, prices.reasoning)) / 1_000_000


def prompt_tokens_upper(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """An upper estimate of a prompt's tokens: two characters per token (real text averages ~4)."""
    size = sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) + 8 for m in messages)
    return (size + len(str(tools))) // 2 + 16


class BudgetedModel:
    """A ``ModelClient`` that reserves each call's worst case on the ledger and settles its actual cost.

    Args:
        inner: The model.
        ledger: The ``BudgetLedger`` actor handle.
        prices: This model's prices.
        max_tokens: Output cap assumed when the call config sets none.
    """

    def __init__(self, inner: ModelClient, ledger: Any, prices: Prices, max_tokens: int) -> None:
        self.inner = inner
        self.model_api = inner.model_api
        self.ledger = ledger
        self.prices = prices
        self.max_tokens = max_tokens

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        cap = config.max_tokens or self.max_tokens
        worst = worst_case_usd(prompt_tokens_upper(messages, tools), cap, self.prices)
        ticket = await self.ledger.reserve.remote(worst)
        if ticket is None:
            raise BudgetReached(f"budget reached: a call's worst case ${worst:.4f} no longer fits the cap")
        actual = 0.0  # a failed call is not billed by the providers we know
        try:
            output = await self.inner.generate(messages, tools, config)
            actual = cost_usd(output.usage, self.prices)
            return output
        finally:
            await self.ledger.settle.remote(ticket, actual)

    async def end_trial(self, messages: list[dict[str, Any]]) -> None:
        """Pass the end of the trial on to a model that drives it from outside (an MCP agent's
        bridge, ``apiflow.mcp.external``), so its agent process and server are released."""
        end = getattr(self.inner, "end_trial", None)
        if end is not None:
            await end(messages)
