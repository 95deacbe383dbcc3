"""``params.cache_ttl`` in a real run: the adapter sends hour marks, reads the hour writes litellm
reports (Anthropic's ``usage.cache_creation``) into ``Usage.cache_write_1h``, the record keeps them and
the trial is priced call by call at the one-hour rate (docs/design/041-prices-and-rows.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from apiflow.errors import UsageError
from apiflow.models.base import Usage
from apiflow.models.provider_fields import usage_from_response
from apiflow.results.prices import calls_cost_usd, cost_usd, load_price_table

CLAUDE = "claude-sonnet-4-6"
ROUTE = f"anthropic/{CLAUDE}"


def test_usage_reads_the_hour_part_of_the_writes_where_litellm_puts_it():
    usage = {
        "prompt_tokens": 5000, "completion_tokens": 40,
        "prompt_tokens_details": {
            "cached_tokens": 1000, "cache_creation_tokens": 3000,
            "cache_creation_token_details": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
        },
    }  # fmt: skip
    assert usage_from_response(usage) == Usage(
        input=1000, output=40, cache_read=1000, cache_write=3000, cache_write_1h=2000
    )
    # No split (a five-minute-only provider, or litellm without it): no hour writes.
    del usage["prompt_tokens_details"]["cache_creation_token_details"]  # type: ignore[attr-defined]
    assert usage_from_response(usage).cache_write_1h == 0
    # A split claiming more than the writes is held to them: the hour writes are a part of the writes.
    usage["prompt_tokens_details"]["cache_creation_token_details"] = {"ephemeral_1h_input_tokens": 9999}  # type: ignore[index]
    assert usage_from_response(usage).cache_write_1h == 3000


def test_a_bad_cache_ttl_is_refused_when_the_client_is_built():
    from apiflow.models.litellm_client import LiteLLMClient

    with pytest.raises(UsageError, match="cache_ttl must be one of"):
        LiteLLMClient(ROUTE, {"cache_ttl": "2h"})
    assert "cache_ttl" not in LiteLLMClient(ROUTE, {"cache_ttl": "1h"}).params


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, Any], Any]]:
    """Every ``acompletion`` call's keyword arguments and its reply's usage."""
    from apiflow.models import litellm_client

    litellm_client.configure_litellm()  # first: the bundled cost map, never a fetch at import
    import litellm

    seen: list[tuple[dict[str, Any], Any]] = []
    real = litellm.acompletion

    async def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append((kwargs, None))
        reply = await real(*args, **kwargs)
        seen[-1] = (kwargs, getattr(reply, "usage", None))
        return reply

    monkeypatch.setattr(litellm, "acompletion", spy)
    return seen


def _marks(kwargs: dict[str, Any]) -> list[dict[str, str]]:
    marks = [t["cache_control"] for t in kwargs.get("tools") or () if "cache_control" in t]
    for message in kwargs["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            marks += [b["cache_control"] for b in content if isinstance(b, dict) and "cache_control" in b]
    return marks


def test_a_claude_trial_asking_hour_marks_records_and_prices_the_hour_writes(monkeypatch):
    from apiflow.agent import TrialSpec
    from apiflow.bank import DEFAULT_BANK, load_bank
    from apiflow.models.litellm_client import LiteLLMClient
    from apiflow.runner import play_trial_sync
    from apiflow.testing.standin_server import StandinConfig, StandinServer

    seen = _spy(monkeypatch)
    prices = load_price_table().price(ROUTE)
    assert prices.cache_write_1h is not None and prices.cache_write_1h > prices.cache_write
    server = StandinServer(StandinConfig(plays=((CLAUDE, "apiflow/oracle"),)))
    server.start()
    try:
        bank = load_bank(DEFAULT_BANK)
        task = bank.task("sample-w01-chain-1to07")
        params = {"api_base": server.root, "api_key": "sk-ant-local", "cache_ttl": "1h"}
        spec = TrialSpec(
            task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
            run_id="r", model_slug="claude", prices=prices,
        )  # fmt: skip
        record = play_trial_sync(spec, LiteLLMClient(ROUTE, params))
    finally:
        server.stop()
    stats = server.provider.stats
    assert record.passed and len(seen) == record.apiflow.model_calls > 1
    # The ttl is ours: never a provider argument; every mark it set asks an hour.
    assert all("cache_ttl" not in kwargs for kwargs, _ in seen)
    assert all(_marks(kwargs) and all(m.get("ttl") == "1h" for m in _marks(kwargs)) for kwargs, _ in seen)
    tokens = record.apiflow.tokens
    assert (
        0
        < tokens.cache_write_1h
        == stats.billed_cache_write_1h
        == stats.billed_cache_write
        == tokens.cache_write
    )
    assert json.loads(record.to_json())["apiflow"]["tokens"]["cache_write_1h"] == tokens.cache_write_1h
    # Priced call by call at the one-hour rate: what each call the provider billed costs.
    calls = [usage_from_response(usage) for _, usage in seen]
    assert sum(c.cache_write_1h for c in calls) == stats.billed_cache_write_1h
    by_hand = sum(
        (c.input * prices.input + c.output * prices.output + c.cache_read * prices.cache_read
         + c.cache_write_1h * prices.cache_write_1h + (c.cache_write - c.cache_write_1h) * prices.cache_write
         + c.reasoning * prices.reasoning) / 1e6
        for c in calls
    )  # fmt: skip
    assert record.apiflow.cost_usd == calls_cost_usd(calls, prices) == pytest.approx(by_hand, abs=1e-8)
    five_minutes = cost_usd(
        Usage(tokens.input, tokens.output, tokens.cache_read, tokens.cache_write, tokens.reasoning), prices
    )
    assert record.apiflow.cost_usd > five_minutes  # the hour writes cost 2x input, not 1.25x


def test_a_key_check_never_sends_the_ttl(monkeypatch):
    from apiflow.models.litellm_client import rejected_key
    from apiflow.testing.standin_server import StandinConfig, StandinServer

    seen = _spy(monkeypatch)
    server = StandinServer(StandinConfig(plays=((CLAUDE, "apiflow/oracle"),)))
    server.start()
    try:
        params = {
            "api_base": server.root,
            "api_key": "sk-ant-local",
            "cache_ttl": "1h",
            "prompt_caching": True,
        }
        assert asyncio.run(rejected_key(ROUTE, params)) is None
    finally:
        server.stop()
    assert len(seen) == 1 and "cache_ttl" not in seen[0][0] and "prompt_caching" not in seen[0][0]
