"""Prompt caching as the published runs had it (apiflow.models.caching), and a stand-in that bills it
the way Anthropic does (apiflow.testing.standin_cache)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from apiflow.agent import TrialSpec
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.errors import UsageError
from apiflow.models.caching import marks_breakpoints, with_breakpoints
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm
from apiflow.results.prices import cost_usd, load_price_table
from apiflow.results.record import TrialRecord
from apiflow.runner import play_trial_sync
from apiflow.testing.standin_cache import PromptCache, prompt_blocks
from apiflow.testing.standin_server import StandinConfig, StandinServer

CLAUDE = "claude-sonnet-4-6"
TASK = "sample-w01-chain-1to07"  # a long chain: many turns over one growing prompt

# -- the marks -----------------------------------------------------------------------------------


def _conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys " * 600}, {"role": "user", "content": "do it"}]
    for n in range(turns):
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{n}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"result {n} " * 50})
    return messages


def _marks(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[str]:
    found = [f"tool:{i}" for i, t in enumerate(tools) if "cache_control" in t]
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, list) and any("cache_control" in b for b in content):
            found.append(f"{m['role']}:{i}")
    return found


def test_rolling_marks_sit_on_system_last_tool_and_last_two_turns() -> None:
    messages, tools = _conversation(5), [{"type": "function", "function": {"name": n}} for n in "abc"]
    before = copy.deepcopy((messages, tools))
    marked, marked_tools = with_breakpoints(messages, tools)
    assert _marks(marked, marked_tools) == ["tool:2", "system:0", "tool:9", "tool:11"]
    assert (messages, tools) == before  # what the client keeps converted is never edited
    def text(message: dict[str, Any]) -> Any:
        content = message.get("content")
        return "".join(b["text"] for b in content) if isinstance(content, list) else content

    # The same turns with the same text: string content goes as one text block, marked or not.
    assert [(m["role"], text(m)) for m in marked] == [(m["role"], text(m)) for m in messages]
    assert all(isinstance(m["content"], list) for m in marked if m["role"] in ("system", "user", "tool"))


def test_four_marks_at_most_and_an_empty_turn_stays_unmarked() -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "user", "content": ""}]
    marked, tools = with_breakpoints(messages, [{"name": "t"}])
    assert len(_marks(marked, tools)) == 3 and marked[2] == {"role": "user", "content": ""}
    marked, tools = with_breakpoints(_conversation(30), [{"name": "t"}])
    assert len(_marks(marked, tools)) == 4


@pytest.mark.parametrize(
    ("model", "marks"),
    [
        ("anthropic/claude-sonnet-4-6", True),
        ("bedrock/us.anthropic.claude-sonnet-4-6-v1:0", True),
        ("vertex_ai/claude-opus-4-6", True),
        ("openai/gpt-5-mini", False),
        ("fireworks_ai/accounts/fireworks/models/kimi-k2p6", False),
        ("bedrock/amazon.nova-pro-v1:0", False),
    ],
)
def test_marks_go_only_where_the_provider_caches_only_at_marks(model: str, marks: bool) -> None:
    assert marks_breakpoints(model) is marks
    assert LiteLLMClient(model).marks_breakpoints is marks
    assert LiteLLMClient(model, {"prompt_caching": False}).marks_breakpoints is False


def test_prompt_caching_must_be_a_bool() -> None:
    with pytest.raises(UsageError, match="prompt_caching"):
        LiteLLMClient("anthropic/claude-sonnet-4-6", {"prompt_caching": "yes"})


# -- the stand-in's bill ---------------------------------------------------------------------------


def _request(turns: int, marks: str) -> dict[str, Any]:
    """A Messages API body of a conversation ``turns`` tool results long, marked ``system`` or ``rolling``."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "do it " * 50}]}]
    for n in range(turns):  # each turn ~360 tokens, as a tool loop's read of a response
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"c{n}", "name": "read", "input": {}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{n}", "content": f"r{n} " * 300}]})
    system = [{"type": "text", "text": "sys " * 1100, "cache_control": {"type": "ephemeral"}}]  # ~1,100 tokens
    if marks == "rolling":
        for m in [m for m in messages if m["role"] == "user"][-2:]:
            m["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {"model": CLAUDE, "system": system, "messages": messages}


def test_a_system_only_mark_caches_far_less_than_rolling_marks() -> None:
    bills = {}
    for marks in ("system", "rolling"):
        cache = PromptCache()
        bills[marks] = [cache.bill(_request(turns, marks)) for turns in range(20)]
    system, rolling = (sum(b.cache_read for b in bills[k]) for k in ("system", "rolling"))
    total = sum(b.input + b.cache_read + b.cache_write for b in bills["rolling"])
    assert total == sum(b.input + b.cache_read + b.cache_write for b in bills["system"])  # the same prompts
    assert rolling > 2 * system
    assert sum(b.input for b in bills["rolling"]) < sum(b.input for b in bills["system"]) / 5


def test_a_prefix_below_the_minimum_is_not_cached_and_the_lookback_is_twenty_blocks() -> None:
    cache = PromptCache()
    short = {"model": CLAUDE, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}]}]}
    assert cache.bill(short).cache_write == 0 and cache.bill(short).cache_read == 0
    long_blocks = [{"type": "text", "text": f"{n} " * 400} for n in range(30)]  # 6 blocks: > 1,024 tokens
    first = {"model": CLAUDE, "messages": [{"role": "user", "content": [*long_blocks[:5], {**long_blocks[5], "cache_control": {}}]}]}
    written = cache.bill(first)
    assert written.cache_write > 0 and written.cache_read == 0
    near = {"model": CLAUDE, "messages": [{"role": "user", "content": [*long_blocks[:24], {**long_blocks[24], "cache_control": {}}]}]}
    far = {"model": CLAUDE, "messages": [{"role": "user", "content": [*long_blocks[:29], {**long_blocks[29], "cache_control": {}}]}]}
    assert PromptCache().bill(near).cache_read == 0
    assert cache.bill(far).cache_read == 0  # the write sits 24 blocks back: past the lookback
    assert cache.bill(near).cache_read == written.cache_write  # 19 blocks back: found


def test_blocks_are_read_in_cache_order() -> None:
    body = {"tools": [{"name": "t"}], "system": "s", "messages": [{"role": "user", "content": "u"}]}
    assert [b.get("name") or b.get("text") for b in prompt_blocks(body)] == ["t", "s", "u"]


# -- a Claude trial through litellm and the stand-in -----------------------------------------------


@pytest.fixture
def standin() -> Iterator[StandinServer]:
    configure_litellm()
    server = StandinServer(StandinConfig(plays=((CLAUDE, "apiflow/oracle"),)))
    server.start()
    yield server
    server.stop()


def _trial(server: StandinServer, **params: Any) -> TrialRecord:
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(TASK)
    client = LiteLLMClient(f"anthropic/{CLAUDE}", {"api_base": server.root, "api_key": "sk-ant-local", **params})
    spec = TrialSpec(
        task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
        run_id="r", model_slug="claude",
    )  # fmt: skip
    return play_trial_sync(spec, client)


def _content(record: TrialRecord) -> dict[str, Any]:
    data = record.model_dump(mode="json")
    for key in ("duration_s", "tokens"):
        data.pop(key)
    data["provenance"].pop("created")
    for key in ("tokens", "cost_usd", "provider_cost_usd", "served"):  # the bill, and per-call request ids
        data["apiflow"].pop(key)
    return data


def test_a_claude_trial_caches_by_default_and_records_the_same_trial(standin: StandinServer) -> None:
    cached = _trial(standin)
    marks = list(standin.provider.stats.cache_marks)
    plain = _trial(standin, prompt_caching=False)
    assert marks and all(n == 4 for n in marks[1:]) and marks[0] == 3  # the first call has one user turn
    assert standin.provider.stats.cache_marks[len(marks) :] == [0] * (len(standin.provider.stats.cache_marks) - len(marks))
    assert _content(cached) == _content(plain)  # same trial id, messages, verdict: only the bill differs
    assert cached.passed and cached.apiflow.trial_id == plain.apiflow.trial_id
    prices = load_price_table().price(f"anthropic/{CLAUDE}")
    dear, cheap = cost_usd(plain.apiflow.tokens, prices), cost_usd(cached.apiflow.tokens, prices)
    assert cached.apiflow.tokens.cache_read > 0 and plain.apiflow.tokens.cache_read == 0
    assert cheap < dear / 2, (cheap, dear)
