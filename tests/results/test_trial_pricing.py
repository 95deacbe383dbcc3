"""A trial is priced call by call when it runs: a long-context rate lands on the calls above the
threshold only, one-hour writes are recorded (when any) and bounded by the writes, and offline
records and costs are what they were (docs/design/041-prices-and-rows.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apiflow.agent import TrialSpec
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.models import make_model
from apiflow.models.base import GenerateConfig, ModelOutput, ToolCall, Usage
from apiflow.resources import resolve
from apiflow.results.prices import (
    DEFAULT_PRICE_TABLE,
    Prices,
    call_cost_usd,
    calls_cost_usd,
    cost_usd,
    load_price_table,
)
from apiflow.results.record import TrialRecord
from apiflow.runner import Run, play_trial_sync

THRESHOLD = 3_000

LONG_TABLE = f"""
version: "test-long"
models:
  scripted:
    input: 3.0
    output: 15.0
    cache_read: 0.3
    cache_write: 3.75
    cache_write_1h: 6.0
    reasoning: 15.0
    long_context: {{above_input_tokens: {THRESHOLD}, input: 6.0, output: 22.5}}
"""


class Scripted:
    """A model whose calls report the usages it is given: a tool call each, then an answer."""

    model_api = "scripted/claude"

    def __init__(self, usages: list[Usage]) -> None:
        self.usages = list(usages)
        self.calls = 0

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        usage = self.usages[self.calls]
        self.calls += 1
        if self.calls == len(self.usages):
            return ModelOutput(text="done", usage=usage)
        return ModelOutput(tool_calls=(ToolCall(f"c{self.calls}", "search", {"query": "x"}),), usage=usage)


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


def _spec(bank: Bank, prices: Prices | None, task_id: str = "sample-w01-chain-1to02") -> TrialSpec:
    task = bank.task(task_id)
    return TrialSpec(
        task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
        run_id="r", model_slug="scripted", prices=prices,
    )  # fmt: skip


@pytest.fixture
def long_prices(tmp_path: Path) -> Prices:
    table = tmp_path / "long.yaml"
    table.write_text(LONG_TABLE)
    return load_price_table(table).price("scripted")


def test_only_the_call_above_the_threshold_is_billed_at_the_long_context_rates(bank, long_prices):
    below = Usage(input=1_000, output=100)
    above = Usage(input=2_500, output=120, cache_read=400, cache_write=200)  # a 3,100-token prompt
    after = Usage(input=500, output=50, cache_read=2_000)  # 2,500: below again
    record = play_trial_sync(_spec(bank, long_prices), Scripted([below, above, after]))
    assert record.apiflow.model_calls == 3
    lc = long_prices.long_context
    assert lc is not None and lc.above_input_tokens == THRESHOLD
    expected = cost_usd(below, long_prices) + cost_usd(above, lc) + cost_usd(after, long_prices)
    assert record.apiflow.cost_usd == pytest.approx(expected, abs=1e-9)
    assert call_cost_usd(above, long_prices) == cost_usd(above, lc) > cost_usd(above, long_prices)
    # The trial's summed tokens (6,600 prompt tokens) cannot say which call crossed: priced whole at
    # either rate they give another figure, below or above the one billed.
    summed = Usage() + below + above + after
    billed = record.apiflow.cost_usd
    assert billed is not None and cost_usd(summed, long_prices) < billed < cost_usd(summed, lc)


def test_hour_writes_are_recorded_priced_and_held_to_the_writes(bank, long_prices):
    honest = Usage(input=1_000, output=10, cache_write=2_000, cache_write_1h=1_500)
    greedy = Usage(input=1_000, output=10, cache_write=100, cache_write_1h=10**6)  # claims more than it wrote
    record = play_trial_sync(_spec(bank, long_prices), Scripted([honest, greedy]))
    tokens = record.apiflow.tokens
    assert (tokens.cache_write, tokens.cache_write_1h) == (2_100, 1_600)
    assert record.apiflow.input_repairs.get("usage") == 1
    held = Usage(input=1_000, output=10, cache_write=100, cache_write_1h=100)
    assert record.apiflow.cost_usd == calls_cost_usd([honest, held], long_prices)
    assert json.loads(record.to_json())["apiflow"]["tokens"]["cache_write_1h"] == 1_600
    assert TrialRecord.model_validate_json(record.to_json()) == record


def test_offline_records_and_costs_are_what_they_were(bank):
    table = load_price_table()
    model = "apiflow/sim:weak"
    prices = table.price(model)
    task = bank.task("sample-w01-chain-1to02")
    unpriced = play_trial_sync(_spec(bank, None), make_model(model, task, 1))
    priced = play_trial_sync(_spec(bank, prices), make_model(model, task, 1))
    assert unpriced.apiflow.cost_usd is None
    # What the callers set before the trial priced itself: its summed tokens at the table's rates.
    assert priced.apiflow.cost_usd == cost_usd(priced.apiflow.tokens, prices) == 0.0
    assert type(priced.apiflow.cost_usd) is float
    text = priced.to_json()
    assert '"cost_usd":0.0' in text and "cache_write_1h" not in text
    priced.apiflow.cost_usd = None
    for record in (priced, unpriced):
        record.duration_s, record.provenance.created = 0.0, ""
    assert priced.to_json() == unpriced.to_json()


def test_a_trial_without_a_call_costs_a_float_zero(bank, long_prices):
    class Broken(Scripted):
        async def generate(self, *args: Any) -> ModelOutput:
            raise RuntimeError("no call made")

    record = play_trial_sync(_spec(bank, long_prices), Broken([]))
    assert record.apiflow.model_calls == 0 and record.is_harness_outcome
    assert record.apiflow.cost_usd == 0.0 and '"cost_usd":0.0' in record.to_json()


def test_a_run_hands_its_prices_to_every_trial(bank, long_prices):
    run = Run(bank, "r", prices=long_prices)
    assert run.spec(bank.task("sample-w01-chain-1to02"), 1, "scripted").prices is long_prices
    assert Run(bank, "r").spec(bank.task("sample-w01-chain-1to02"), 1, "scripted").prices is None


def test_a_grid_and_the_library_default_to_the_same_price_table():
    from cluster.spec import GridSpec

    default = GridSpec.model_fields["price_table"].default
    assert resolve("prices", default).resolve() == DEFAULT_PRICE_TABLE.resolve()
    assert load_price_table(default).hash == load_price_table().hash


def test_the_grid_worker_prices_each_call_and_the_budget_charges_each_call(tmp_path: Path):
    """An offline model priced by a table with a low threshold: its later, longer prompts cross it."""
    import asyncio

    import yaml

    from cluster.budget import BudgetedModel
    from cluster.driver import absolute_paths
    from cluster.plan import plan_grid
    from cluster.spec import load_grid
    from cluster.worker import TrialRunner, load_checked_bank

    root = Path(__file__).resolve().parents[2]
    table = tmp_path / "long.yaml"
    table.write_text(LONG_TABLE.replace("  scripted:", '  "apiflow/*":'))
    grid = yaml.safe_load((root / "configs/grids/demo.yaml").read_text())
    grid.update(
        models=[{"model": "apiflow/oracle"}], epochs=1, out=str(tmp_path / "out"), price_table=str(table)
    )
    grid["tasks"] = {"ids": ["sample-w01-chain-1to02"]}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    spec = absolute_paths(load_grid(tmp_path / "grid.yaml"), root)
    planned = plan_grid(spec, load_checked_bank(spec))[0]
    runner = TrialRunner(spec, "r")

    charged: list[float] = []

    class Ledger:
        class charge:  # noqa: N801 - the actor method's shape: ``ledger.charge.remote(key, usd)``
            @staticmethod
            async def remote(key: str, usd: float) -> None:
                charged.append(usd)

    runner.ledger = Ledger()
    record, row = asyncio.run(runner._play(planned))
    prices = load_price_table(table).price("apiflow/oracle")
    lc = prices.long_context
    assert lc is not None and record.apiflow.model_calls > 2
    tokens = record.apiflow.tokens
    billed = record.apiflow.cost_usd
    assert billed is not None and cost_usd(tokens, prices) < billed < cost_usd(
        tokens, lc
    )  # some calls crossed
    assert row["cost_usd"] == record.apiflow.cost_usd
    assert isinstance(runner._model(spec.models[0], 0, planned), BudgetedModel)
    assert len(charged) == record.apiflow.model_calls
    assert sum(charged) == pytest.approx(record.apiflow.cost_usd, abs=1e-8)
