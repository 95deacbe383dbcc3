"""Reasoning replay, strict provider checks, usage kinds and OpenAI-compatible servers' rules: litellm
against the stand-in on 127.0.0.1.

Each trial here runs the real provider path — ``LiteLLMClient`` -> litellm's ``anthropic/`` or
``openai/`` route -> HTTP -> the stand-in — with a real model id (the stand-in plays it with the
oracle), so litellm applies that model's real capabilities (thinking, reasoning). The stand-in
refuses what the live APIs refuse, so the tests that turn replay off expect the live API's 400.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from apiflow.agent import TrialSpec
from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import litellm_client
from apiflow.models.chat_messages import to_openai_messages
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm, empty_text_for
from apiflow.models.provider_fields import ReplayState, usage_from_response
from apiflow.results.prices import cost_usd, load_price_table
from apiflow.results.record import Termination, TrialRecord
from apiflow.runner import play_trial_sync
from apiflow.testing.standin_anthropic import sign
from apiflow.testing.standin_server import StandinConfig, StandinServer

CLAUDE, DEEPSEEK, GPT = "claude-sonnet-4-6", "deepseek-v4-flash", "gpt-5-mini"
PLAYS = ((CLAUDE, "apiflow/oracle"), (DEEPSEEK, "apiflow/oracle"), (GPT, "apiflow/oracle"))
THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 4096}
TASK = "sample-w01-chain-1to04"  # a chain: a dozen dependent turns, each a tool loop step


@pytest.fixture(scope="module")
def bank() -> Any:
    configure_litellm()
    return load_bank(DEFAULT_BANK)


@pytest.fixture
def standin() -> Iterator[StandinServer]:
    server = StandinServer(StandinConfig(plays=PLAYS))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def reasoning_standin() -> Iterator[StandinServer]:
    server = StandinServer(StandinConfig(plays=PLAYS, reasoning=True))
    server.start()
    yield server
    server.stop()


def play(bank: Any, client: LiteLLMClient, task_id: str = TASK) -> TrialRecord:
    task = bank.task(task_id)
    return play_trial_sync(
        TrialSpec(
            task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
            run_id="r", model_slug="standin",
        ),
        client,
    )


def claude(server: StandinServer, replay: bool = True, **params: Any) -> LiteLLMClient:
    return LiteLLMClient(
        f"anthropic/{CLAUDE}", {"api_base": server.root, "api_key": "sk-ant-local", **params}, replay=replay
    )


def deepseek(server: StandinServer, replay: bool = True) -> LiteLLMClient:
    return LiteLLMClient(f"openai/{DEEPSEEK}", {"api_base": server.url, "api_key": "sk-local"}, replay=replay)


def gpt_responses(server: StandinServer, replay: bool = True) -> LiteLLMClient:
    params = {"api_base": server.url, "api_key": "sk-local", "reasoning_effort": "low"}
    return LiteLLMClient(f"openai/responses/{GPT}", params, replay=replay)


def reasoning_blocks(record: TrialRecord) -> list[str]:
    return [
        block["reasoning"]
        for m in record.messages
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for block in m["content"]
        if block["type"] == "reasoning"
    ]


# -- replay in tool loops ------------------------------------------------------------------------


def assert_sent_as_whole(client: LiteLLMClient, record: TrialRecord) -> None:
    """The client converts only new messages each call: what it sent equals converting the whole
    conversation at once (and litellm did not edit the messages it was given)."""
    sent = client._converted
    assert len(sent) == len(record.messages) - 1  # all but the last turn, the one it returned
    assert sent == to_openai_messages(record.messages[:-1], client.turns, empty_text_for(client.model_api))


def test_anthropic_tool_loop_replays_signed_thinking_blocks(bank: Any, standin: StandinServer) -> None:
    client = claude(standin, **THINKING)
    record = play(bank, client)
    assert_sent_as_whole(client, record)
    assert record.apiflow.termination == Termination.ANSWERED and record.passed
    assert standin.provider.stats.rejected == 0 and record.apiflow.model_calls >= 10
    thoughts = reasoning_blocks(record)
    assert len(thoughts) == record.apiflow.model_calls and thoughts[0].startswith("Turn 0:")


def test_anthropic_without_replay_gets_the_live_apis_400(bank: Any, standin: StandinServer) -> None:
    record = play(bank, claude(standin, replay=False, **THINKING))
    assert record.apiflow.termination == Termination.PROVIDER_ERROR  # a harness outcome, not the model's
    assert "400" in record.apiflow.harness_error or "BadRequest" in record.apiflow.harness_error
    assert "Expected `thinking` or `redacted_thinking`, but found `tool_use`" in record.apiflow.harness_error
    assert standin.provider.stats.rejected == 1 and record.apiflow.model_calls == 1


def test_open_weight_reasoning_content_is_replayed(bank: Any, reasoning_standin: StandinServer) -> None:
    client = deepseek(reasoning_standin)
    record = play(bank, client)
    assert_sent_as_whole(client, record)
    assert record.apiflow.termination == Termination.ANSWERED and record.passed
    assert reasoning_standin.provider.stats.rejected == 0
    assert len(reasoning_blocks(record)) == record.apiflow.model_calls
    assert record.apiflow.tokens.reasoning == reasoning_standin.provider.stats.billed_reasoning > 0


def test_open_weight_without_replay_gets_the_400(bank: Any, reasoning_standin: StandinServer) -> None:
    record = play(bank, deepseek(reasoning_standin, replay=False))
    assert record.apiflow.termination == Termination.PROVIDER_ERROR
    assert "Missing `reasoning_content`" in (record.apiflow.harness_error or "")


def test_responses_reasoning_items_with_encrypted_content_are_replayed(
    bank: Any, standin: StandinServer
) -> None:
    record = play(bank, gpt_responses(standin))
    assert record.apiflow.termination == Termination.ANSWERED and record.passed
    assert standin.provider.stats.rejected == 0
    assert record.apiflow.tokens.reasoning == standin.provider.stats.billed_reasoning > 0
    assert record.apiflow.tokens.cache_read == standin.provider.stats.billed_cache_read > 0


def test_responses_without_replay_gets_the_400(bank: Any, standin: StandinServer) -> None:
    record = play(bank, gpt_responses(standin, replay=False))
    assert record.apiflow.termination == Termination.PROVIDER_ERROR
    assert "without its required 'reasoning' item" in (record.apiflow.harness_error or "")


def test_replay_state_goes_back_with_its_own_turn() -> None:
    transcript = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [], "tool_calls": [{"id": "c1", "name": "read", "arguments": {}}]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1", "function": "read"},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    items = [{"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAAA-opaque", "summary": []}]
    first = ReplayState({"reasoning_items": items}, ({"thought_signature": "sig-1"},))
    sent = to_openai_messages(transcript, [first, None])
    assert sent[1]["reasoning_items"] == items
    assert sent[1]["tool_calls"][0]["provider_specific_fields"] == {"thought_signature": "sig-1"}
    assert set(sent[3]) == {"role", "content"}  # the turn without state is sent as before
    assert to_openai_messages(transcript) == to_openai_messages(transcript, ())


def test_a_new_conversation_drops_the_held_state(bank: Any, standin: StandinServer) -> None:
    client = claude(standin, **THINKING)
    play(bank, client, "sample-w01-sub01")
    held = len(client.turns)
    assert held >= 2 and all(state is not None for state in client.turns)
    second = play(bank, client, "sample-w01-sub01")  # sequential reuse: the earlier turns are not replayed
    assert second.passed and len(client.turns) == held and standin.provider.stats.rejected == 0


# -- strict checks (what the live APIs refuse) -----------------------------------------------------


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _messages_body(bank: Any, *turns: dict[str, Any], **extra: Any) -> dict[str, Any]:
    system, user = initial_messages(bank.task("sample-w01-sub01"))
    return {"model": CLAUDE, "max_tokens": 4096, "system": system["content"],
            "messages": [{"role": "user", "content": user["content"]}, *turns], **extra}  # fmt: skip


USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "search", "input": {}}]}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "[]"}]}


@pytest.mark.parametrize(
    ("turns", "extra", "says"),
    [
        ((RESULT,), {}, "unexpected `tool_use_id` found in `tool_result` blocks: toolu_1"),
        ((USE, {"role": "user", "content": "and?"}), {}, "`tool_use` ids were found without `tool_result`"),
        (({"role": "assistant", "content": []}, RESULT), {}, "must have non-empty content"),
        (({"role": "assistant", "content": [{"type": "text", "text": ""}]},), {}, "text content blocks must be non-empty"),
        ((USE, RESULT), THINKING, "Expected `thinking` or `redacted_thinking`, but found `tool_use`"),
        (({"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "forged"},
                                            *USE["content"]]}, RESULT), THINKING, "Invalid `signature`"),
        ((), {"thinking": {"type": "enabled", "budget_tokens": 8000}}, "greater than `thinking.budget_tokens`"),
    ],
)  # fmt: skip
def test_messages_wire_refuses_what_anthropic_refuses(
    bank: Any, standin: StandinServer, turns: tuple[dict[str, Any], ...], extra: dict[str, Any], says: str
) -> None:
    status, body = post(f"{standin.root}/v1/messages", _messages_body(bank, *turns, **extra))
    assert status == 400 and body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error" and says in body["error"]["message"]


def test_messages_wire_accepts_a_signed_thinking_block(bank: Any, standin: StandinServer) -> None:
    key = standin.provider.key
    signed = {"type": "thinking", "thinking": "t", "signature": sign(key, "t")}
    use = {"role": "assistant", "content": [signed, *USE["content"]]}
    status, body = post(f"{standin.root}/v1/messages", _messages_body(bank, use, RESULT, **THINKING))
    assert status == 200 and body["type"] == "message" and body["content"][0]["type"] == "thinking"
    assert body["content"][0]["signature"] == sign(key, body["content"][0]["thinking"])


def test_chat_wire_refuses_orphan_and_unanswered_tool_calls(bank: Any, standin: StandinServer) -> None:
    opening = initial_messages(bank.task("sample-w01-sub01"))
    call = {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    orphan = [*opening, {"role": "tool", "tool_call_id": "call_9", "content": "[]"}]
    unanswered = [*opening, {"role": "assistant", "content": None, "tool_calls": [call]},
                  {"role": "user", "content": "and?"}]  # fmt: skip
    for messages, says in ((orphan, "must be a response to a preceeding message"), (unanswered, "call_1")):
        status, body = post(
            f"{standin.url}/chat/completions", {"model": "apiflow/oracle", "messages": messages}
        )
        assert status == 400 and body["error"]["type"] == "invalid_request_error"
        assert says in body["error"]["message"]


# -- usage kinds per provider, priced per kind ---------------------------------------------------


def test_anthropic_cache_and_thinking_tokens_are_read_and_priced_per_kind(
    bank: Any, standin: StandinServer
) -> None:
    cache = {"cache_control_injection_points": [{"location": "message", "role": "system"}]}
    record = play(bank, claude(standin, **THINKING, **cache))
    tokens, billed = record.apiflow.tokens, standin.provider.stats
    assert record.passed and tokens.cache_read > 0 and tokens.cache_write > 0 and tokens.reasoning > 0
    # What the provider billed, kind by kind (Anthropic does not split thinking out of output_tokens:
    # litellm estimates the reasoning part, so only the completion total is exact).
    assert (tokens.input, tokens.cache_read, tokens.cache_write) == (
        billed.billed_input,
        billed.billed_cache_read,
        billed.billed_cache_write,
    )
    assert tokens.output + tokens.reasoning == billed.billed_output + billed.billed_reasoning
    assert record.tokens.cache == tokens.cache_read  # the published block: cache = reads
    prices = load_price_table().price(f"anthropic/{CLAUDE}")  # 3 / 15 / 0.3 / 3.75 / 15 USD per 1M
    by_hand = (
        tokens.input * 3.0 + tokens.output * 15.0 + tokens.cache_read * 0.3
        + tokens.cache_write * 3.75 + tokens.reasoning * 15.0
    ) / 1_000_000  # fmt: skip
    assert cost_usd(tokens, prices) == pytest.approx(by_hand, abs=1e-9) and by_hand > 0


def test_without_a_cache_breakpoint_anthropic_bills_everything_as_input(
    bank: Any, standin: StandinServer
) -> None:
    record = play(bank, claude(standin, prompt_caching=False), "sample-w01-sub01")
    tokens = record.apiflow.tokens
    assert (tokens.cache_read, tokens.cache_write, tokens.reasoning) == (0, 0, 0)
    assert tokens.input == standin.provider.stats.billed_input > 0


@pytest.mark.parametrize(
    ("usage", "kinds"),
    [  # (provider's usage as litellm hands it over, (input, output, cache_read, cache_write, reasoning))
        ({"prompt_tokens": 100, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 60},
          "completion_tokens_details": {"reasoning_tokens": 10}}, (40, 20, 60, 0, 10)),  # OpenAI
        ({"prompt_tokens": 100, "completion_tokens": 30, "cache_read_input_tokens": 50,
          "cache_creation_input_tokens": 20}, (30, 30, 50, 20, 0)),  # Anthropic via litellm
        ({"prompt_tokens": 100, "completion_tokens": 30, "prompt_cache_hit_tokens": 70,
          "prompt_cache_miss_tokens": 30}, (30, 30, 70, 0, 0)),  # DeepSeek's own fields
        ({"prompt_tokens": 100, "completion_tokens": 30, "cached_tokens": 25}, (75, 30, 25, 0, 0)),  # Kimi
    ],
)  # fmt: skip
def test_usage_kinds_are_read_where_each_provider_reports_them(
    usage: dict[str, Any], kinds: tuple[int, ...]
) -> None:
    got = usage_from_response(usage)
    assert (got.input, got.output, got.cache_read, got.cache_write, got.reasoning) == kinds


# -- OpenAI-compatible servers: what llama-cpp-python's server refused ------------------------------
# bench/bench_realmodel.py found it: litellm drops an assistant turn's ``content: None`` key, and
# llama-cpp-python's chatml-function-calling template then fails with HTTP 500 (docs/design/046).


@pytest.fixture
def llama_like() -> Iterator[StandinServer]:
    server = StandinServer(StandinConfig(plays=(("smollm2", "apiflow/oracle"),), require_content=True))
    server.start()
    yield server
    server.stop()


def smollm(server: StandinServer) -> LiteLLMClient:
    return LiteLLMClient("openai/smollm2", {"api_base": server.url, "api_key": "sk-local"})


def test_a_tool_loop_passes_on_a_server_that_reads_every_content(
    bank: Any, llama_like: StandinServer
) -> None:
    record = play(bank, smollm(llama_like))
    assert record.apiflow.termination == Termination.ANSWERED and record.passed
    assert record.apiflow.model_calls >= 10 and llama_like.provider.stats.server_errors == 0


def test_without_empty_text_the_server_fails_as_llama_cpp_did(
    bank: Any, llama_like: StandinServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(litellm_client, "empty_text_for", lambda model: None)  # the old conversion
    record = play(bank, smollm(llama_like))
    assert record.apiflow.termination == Termination.PROVIDER_ERROR and record.apiflow.model_calls == 1
    assert "'dict object' has no attribute 'content'" in (record.apiflow.harness_error or "")
    assert llama_like.provider.stats.server_errors == 1


def test_only_openai_wire_routes_send_empty_text() -> None:
    configure_litellm()
    assert empty_text_for("openai/smollm2") == "" == empty_text_for("openai/responses/gpt-5-mini")
    assert empty_text_for("hosted_vllm/qwen") == ""
    # litellm turns "" into an empty text part on Gemini and drops None itself for Anthropic.
    assert empty_text_for(f"anthropic/{CLAUDE}") is None and empty_text_for("gemini/gemini-2.5-flash") is None
    turn = [
        {"role": "assistant", "content": [], "tool_calls": [{"id": "c", "name": "read", "arguments": {}}]}
    ]
    assert to_openai_messages(turn, (), "")[0]["content"] == ""
    assert to_openai_messages(turn)[0]["content"] is None
