"""The price model as providers bill: one-hour cache writes apart from five-minute ones, and long-context
rates decided per call (docs/design/041-prices-and-rows.md)."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from apiflow.errors import UsageError
from apiflow.models.base import Usage
from apiflow.results.prices import (
    PRICE_KINDS,
    Prices,
    call_cost_usd,
    calls_cost_usd,
    cost_usd,
    load_price_table,
)

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "configs" / "prices"
FIXTURES = ROOT / "tests" / "data" / "transcripts"


@dataclass(frozen=True)
class Counts:
    """One call's usage with the one-hour part of its cache writes (what the adapter is to carry)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cache_write_1h: int = 0


def test_one_hour_writes_are_priced_apart_from_five_minute_ones():
    sonnet = load_price_table(TABLES / "2027-02.yaml").price("anthropic/claude-sonnet-4-6")
    assert (sonnet.cache_write, sonnet.cache_write_1h) == (pytest.approx(1.25 * sonnet.input), pytest.approx(2 * sonnet.input))
    five = Counts(cache_write=100_000)
    hour = Counts(cache_write=100_000, cache_write_1h=100_000)
    half = Counts(cache_write=100_000, cache_write_1h=50_000)
    assert cost_usd(five, sonnet) == pytest.approx(0.375)
    assert cost_usd(hour, sonnet) == pytest.approx(0.6)
    assert cost_usd(half, sonnet) == pytest.approx(0.05 * 3.75 + 0.05 * 6.0)
    assert call_cost_usd(hour, sonnet) == cost_usd(hour, sonnet)  # below the long-context threshold
    # A usage without the split (today's ``Usage``) prices every write at the five-minute rate.
    assert cost_usd(Usage(cache_write=100_000), sonnet) == cost_usd(five, sonnet)
    # A one-hour count above the writes it is a part of is held to them, never billed beyond.
    assert cost_usd(Counts(cache_write=10, cache_write_1h=10**9), sonnet) == cost_usd(Counts(cache_write=10, cache_write_1h=10), sonnet)


def test_a_table_without_one_hour_rates_prices_them_as_writes():
    old = load_price_table(TABLES / "2027-01.yaml").price("claude-sonnet-4-6")
    assert old.cache_write_1h is None and old.long_context is None
    hour = Counts(input=10, cache_write=1_000_000, cache_write_1h=1_000_000)
    assert cost_usd(hour, old) == cost_usd(Usage(input=10, cache_write=1_000_000), old)


def _call(prompt: int, output: int = 1000) -> Counts:
    """One call's usage: its prompt mostly read from the cache, as a long Claude trial's calls are."""
    return Counts(input=prompt // 10, cache_read=prompt - prompt // 10 - 2000, cache_write=2000, output=output)


def test_a_call_above_the_long_context_threshold_is_billed_whole_at_the_higher_rates():
    prices = load_price_table(TABLES / "2027-02.yaml").price("claude-sonnet-4-6")
    long = prices.long_context
    assert long is not None and long.above_input_tokens == 200_000
    below, above = _call(150_000), _call(250_000)
    assert call_cost_usd(below, prices) == cost_usd(below, prices)
    assert call_cost_usd(above, prices) == cost_usd(above, long)
    expected = (25_000 * 6.0 + 223_000 * 0.6 + 2000 * 7.5 + 1000 * 22.5) / 1e6  # every kind, not the excess
    assert call_cost_usd(above, prices) == pytest.approx(expected)
    at = Counts(input=200_000)  # "above": a prompt of exactly the threshold is base-priced
    assert call_cost_usd(at, prices) == cost_usd(at, prices)


def test_the_threshold_is_per_call_not_per_trial():
    prices = load_price_table(TABLES / "2027-02.yaml").price("claude-sonnet-4-6")
    calls = [_call(150_000), _call(150_000)]  # 300K summed, each call below 200K
    summed = calls[0]
    summed = Counts(**{k: getattr(summed, k) * 2 for k in (*PRICE_KINDS, "cache_write_1h")})
    assert calls_cost_usd(calls, prices) == pytest.approx(cost_usd(summed, prices))  # base rates
    assert call_cost_usd(summed, prices) > calls_cost_usd(calls, prices)  # what pricing the sum would do
    mixed = [_call(150_000), _call(250_000)]
    assert calls_cost_usd(mixed, prices) == pytest.approx(cost_usd(mixed[0], prices) + cost_usd(mixed[1], prices.long_context))
    assert calls_cost_usd([], prices) == 0.0


def test_gemini_is_the_other_long_context_provider_and_a_tier_scales_both_rates():
    table = load_price_table(TABLES / "2027-02.yaml")
    gemini = table.price("gemini/gemini-2.5-pro")
    assert (gemini.input, gemini.long_context.input, gemini.long_context.output) == (1.25, 2.5, 15.0)
    assert call_cost_usd(Counts(input=300_000), gemini) == pytest.approx(0.75)  # 300K x $2.50
    batch = table.price("claude-opus-4-8", "batch")
    standard = table.price("claude-opus-4-8")
    for kind in (*PRICE_KINDS, "cache_write_1h"):
        assert getattr(batch, kind) == pytest.approx(getattr(standard, kind) / 2)
        assert getattr(batch.long_context, kind) == pytest.approx(getattr(standard.long_context, kind) / 2)
    assert batch.long_context.above_input_tokens == standard.long_context.above_input_tokens


def test_long_context_kinds_left_out_follow_the_input_and_output_ratios(tmp_path):
    table = tmp_path / "t.yaml"
    table.write_text(
        "version: t\nmodels:\n  m:\n    input: 2\n    output: 10\n    cache_read: 0.2\n    cache_write: 2.5\n"
        "    cache_write_1h: 4\n    reasoning: 10\n"
        "    long_context: {above_input_tokens: 1000, input: 4, output: 15, cache_read: 0.3}\n"
    )
    long = load_price_table(table).price("m").long_context
    assert long is not None
    assert (long.cache_read, long.cache_write, long.cache_write_1h, long.reasoning) == (0.3, 5.0, 8.0, 15.0)


def test_2027_02_keeps_every_2027_01_base_rate():
    """The new table adds kinds and rules; a call with five-minute writes below the threshold costs the same."""
    old, new = load_price_table(TABLES / "2027-01.yaml"), load_price_table(TABLES / "2027-02.yaml")
    assert set(old.entries) <= set(new.entries) and old.tiers == new.tiers
    for key, entry in old.entries.items():
        assert new.entries[key].aliases == entry.aliases and new.entries[key].tiers == entry.tiers
        for tier in ("standard", *(old.tiers if entry.tiers is None else entry.tiers)):
            before, after = old.price(key, tier), new.price(key, tier)
            assert all(getattr(before, k) == getattr(after, k) for k in PRICE_KINDS), (key, tier)


def _fixture_usage() -> list[tuple[str, Usage]]:
    out = []
    for path in sorted(FIXTURES.glob("*/*.json")):
        record = json.loads(path.read_text())
        t = record["tokens"]
        write = max(0, t["total"] - t["input"] - t["output"] - t["cache"])
        out.append((record["model"], Usage(input=t["input"], output=t["output"], cache_read=t["cache"], cache_write=write)))
    return out


@pytest.mark.parametrize(
    ("table", "total", "priced"),
    # Figures the tables gave the 42 fixture transcripts, every tier, before one-hour writes and long
    # context were modelled: an old table must keep giving them.
    [("2026-12", 4.1718827, 42), ("local-2026-12", 0.0, 0), ("2027-01", 8.064514548, 106)],
)
def test_old_tables_give_the_costs_they_gave(table, total, priced):
    loaded = load_price_table(TABLES / f"{table}.yaml")
    costs = []
    for model, usage in _fixture_usage():
        if not loaded.has(model):
            continue
        for tier in ("standard", *loaded.tiers):
            try:
                prices = loaded.price(model, tier)
            except UsageError:  # a tier this model's provider lacks
                continue
            assert prices.long_context is None and prices.cache_write_1h is None
            costs.append(cost_usd(usage, prices))
            assert call_cost_usd(usage, prices) == costs[-1]
    assert (round(sum(costs), 9), len(costs)) == (total, priced)


def test_prices_built_by_hand_still_compare_equal():
    """Plug-ins and tests build ``Prices`` from the five kinds; the new fields default to none."""
    free = Prices(input=0, output=0, cache_read=0, cache_write=0, reasoning=0)
    assert free == load_price_table().price("apiflow/oracle")
    assert Prices(**{**free.model_dump(), "input": 2.0}).input == 2.0
