"""One-hour cache marks (``params.cache_ttl``) and a stand-in that bills one-hour writes apart, as
Anthropic does (apiflow.models.caching, apiflow.testing.standin_cache)."""

from __future__ import annotations

from typing import Any

import pytest

from apiflow.errors import UsageError
from apiflow.models.caching import EPHEMERAL, HOUR, cache_ttl, with_breakpoints
from apiflow.testing.standin_cache import TTL_1H_S, TTL_S, PromptCache

CLAUDE = "claude-sonnet-4-6"


def _conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys " * 600}, {"role": "user", "content": "do it"}]
    for n in range(turns):
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{n}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"result {n} " * 50})
    return messages


def _marks(ttl: str) -> list[tuple[str, dict[str, str]]]:
    tools = [{"type": "function", "function": {"name": n}} for n in "ab"]
    messages, tools = with_breakpoints(_conversation(3), tools, ttl)
    found = [("tool", t["cache_control"]) for t in tools if "cache_control" in t]
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            found += [(m["role"], b["cache_control"]) for b in content if "cache_control" in b]
    return found


def test_the_ttl_sets_every_mark_or_only_the_shared_prefix():
    assert _marks("5m") == [("tool", EPHEMERAL), ("system", EPHEMERAL), ("tool", EPHEMERAL), ("tool", EPHEMERAL)]
    assert "ttl" not in EPHEMERAL  # a default run sends the bytes it sent before ``cache_ttl`` existed
    assert _marks("1h") == [("tool", HOUR), ("system", HOUR), ("tool", HOUR), ("tool", HOUR)]
    # Longer marks before shorter ones, as Anthropic requires: tools and system first in cache order.
    assert _marks("1h-prefix") == [("tool", HOUR), ("system", HOUR), ("tool", EPHEMERAL), ("tool", EPHEMERAL)]


def test_cache_ttl_is_read_from_params_and_checked():
    assert cache_ttl({}) == "5m" and cache_ttl({"cache_ttl": "1h"}) == "1h"
    with pytest.raises(UsageError, match="cache_ttl must be one of 5m, 1h, 1h-prefix"):
        cache_ttl({"cache_ttl": "2h"})


def _body(turns: int, ttl: str) -> dict[str, Any]:
    """A Messages API body as the adapter sends it: system and the last two turns marked."""
    system = {"type": "text", "text": "sys " * 1100, "cache_control": HOUR if ttl != "5m" else EPHEMERAL}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "do it " * 50}]}]
    for n in range(turns):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"c{n}", "name": "r", "input": {}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{n}", "content": f"r{n} " * 300}]})
    rolling = HOUR if ttl == "1h" else EPHEMERAL
    for m in [m for m in messages if m["role"] == "user"][-2:]:
        m["content"][-1] = {**m["content"][-1], "cache_control": rolling}
    return {"model": CLAUDE, "system": [system], "messages": messages}


def test_the_stand_in_splits_writes_by_lifetime_and_keeps_an_hours_entry_an_hour():
    now = [0.0]
    bills = {}
    for ttl in ("5m", "1h", "1h-prefix"):
        cache = PromptCache(clock=lambda: now[0])
        bills[ttl] = [cache.bill(_body(turns, ttl)) for turns in range(6)]
    # The same prompts read and written alike: only the lifetime of the writes differs.
    for ttl in ("1h", "1h-prefix"):
        assert [(b.input, b.cache_read, b.cache_write) for b in bills[ttl]] == [
            (b.input, b.cache_read, b.cache_write) for b in bills["5m"]
        ]
    assert all(b.cache_write_1h == 0 for b in bills["5m"])
    assert all(b.cache_write_1h == b.cache_write for b in bills["1h"])
    first, later = bills["1h-prefix"][0], bills["1h-prefix"][1:]
    assert 0 < first.cache_write_1h < first.cache_write  # the system prompt for an hour, the turns not
    assert all(b.cache_write_1h == 0 for b in later)  # the prefix is read after that, never rewritten

    for ttl, kept in (("5m", False), ("1h-prefix", True)):
        cache = PromptCache(clock=lambda: now[0])
        now[0] = 0.0
        cache.bill(_body(3, ttl))
        now[0] = TTL_S + 60  # another trial of the task, six minutes on: past five minutes, within the hour
        again = cache.bill(_body(0, ttl))
        assert (again.cache_read > 0) is kept, ttl
        now[0] += TTL_1H_S + 1
        assert cache.bill(_body(0, ttl)).cache_read == 0  # an hour idle: gone either way


def test_a_claude_trial_with_hour_marks_is_billed_hour_writes_and_litellm_reports_them(monkeypatch):
    """Through litellm and the stand-in: the marks' ``ttl`` reaches the provider, the reply's
    ``cache_creation`` split reaches litellm's usage, where the adapter is to read it."""
    import litellm

    from apiflow.agent import TrialSpec
    from apiflow.bank import DEFAULT_BANK, load_bank
    from apiflow.models import litellm_client
    from apiflow.runner import play_trial_sync
    from apiflow.testing.standin_server import StandinConfig, StandinServer

    litellm_client.configure_litellm()
    usages: list[Any] = []
    real = litellm.acompletion

    async def spy(*args: Any, **kwargs: Any) -> Any:
        reply = await real(*args, **kwargs)
        usages.append(reply.usage)
        return reply

    monkeypatch.setattr(litellm, "acompletion", spy)
    server = StandinServer(StandinConfig(plays=((CLAUDE, "apiflow/oracle"),)))
    server.start()
    try:
        bank = load_bank(DEFAULT_BANK)
        task = bank.task("sample-w01-chain-1to07")
        client = litellm_client.LiteLLMClient(f"anthropic/{CLAUDE}", {"api_base": server.root, "api_key": "sk-ant-local", "cache_ttl": "1h-prefix"})
        spec = TrialSpec(
            task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
            run_id="r", model_slug="claude",
        )  # fmt: skip
        record = play_trial_sync(spec, client)
    finally:
        server.stop()
    stats = server.provider.stats
    assert record.passed and 0 < stats.billed_cache_write_1h < stats.billed_cache_write
    details = [u.prompt_tokens_details.cache_creation_token_details for u in usages]
    assert sum(d.ephemeral_1h_input_tokens or 0 for d in details) == stats.billed_cache_write_1h
    assert sum((d.ephemeral_1h_input_tokens or 0) + (d.ephemeral_5m_input_tokens or 0) for d in details) == (
        stats.billed_cache_write
    )
    assert record.apiflow.tokens.cache_write == stats.billed_cache_write  # the total, as before
