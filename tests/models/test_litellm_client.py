"""The litellm adapter against a local OpenAI-compatible stand-in on 127.0.0.1 (never a live API)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from apiflow.models.base import ContextWindowExceeded, GenerateConfig, ProviderError, Usage
from apiflow.models.chat_messages import parse_arguments, to_openai_messages
from apiflow.models.faults import LiteLLMProviderError
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm


class StandIn:
    """A scripted chat-completions server: each request pops the next (status, body) reply."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, dict[str, Any], dict[str, str]]] = []
        self.requests: list[dict[str, Any]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("content-length", 0))
                stand_in.requests.append(json.loads(self.rfile.read(length)))
                status, body, headers = stand_in.replies.pop(0)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture(scope="module")
def stand_in() -> Iterator[StandIn]:
    configure_litellm()
    server = StandIn()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()
    server.thread.join(timeout=5)


def _completion(message: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "stand-in",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        "usage": usage,
    }


def _client(stand_in: StandIn) -> LiteLLMClient:
    return LiteLLMClient("openai/stand-in", {"api_base": stand_in.api_base, "api_key": "sk-local-test"})


TRANSCRIPT = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "do it"},
    {
        "role": "assistant",
        "content": [{"type": "reasoning", "reasoning": "hmm"}, {"type": "text", "text": "Looking."}],
        "tool_calls": [{"id": "c1", "name": "search", "arguments": {"query": ""}}],
    },
    {
        "role": "tool",
        "content": "",
        "tool_call_id": "c1",
        "function": "search",
        "error": {"type": "parsing", "message": "bad input"},
    },
]
TOOLS = [
    {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {}}}}
]


def test_tool_calls_and_usage_round_trip(stand_in: StandIn) -> None:
    message = {
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "read", "arguments": '{"entity_ref": "spec:openapi"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "execute", "arguments": '{"request": {"url": '},
            },
        ],
    }
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 300,
        "total_tokens": 1300,
        "prompt_tokens_details": {"cached_tokens": 600},
        "completion_tokens_details": {"reasoning_tokens": 120},
    }
    stand_in.replies.append((200, _completion(message, usage), {}))
    out = asyncio.run(_client(stand_in).generate(TRANSCRIPT, TOOLS, GenerateConfig()))
    sent = stand_in.requests[-1]
    assert sent["temperature"] == 1.0 and sent["tools"] == TOOLS
    assert sent["messages"][2]["tool_calls"][0]["function"] == {
        "name": "search",
        "arguments": '{"query": ""}',
    }
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "bad input"}
    assert [c.name for c in out.tool_calls] == ["read", "execute"]
    assert out.tool_calls[0].arguments == {"entity_ref": "spec:openapi"}
    assert out.tool_calls[1].arguments == '{"request": {"url": '  # malformed: raw text for the tool error
    # Disjoint kinds: 300 completion tokens = 180 visible output + 120 reasoning.
    assert out.usage == Usage(input=400, output=180, cache_read=600, cache_write=0, reasoning=120)
    assert out.text == ""


def test_text_answer(stand_in: StandIn) -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    stand_in.replies.append((200, _completion({"content": "```json\n{}\n```"}, usage), {}))
    out = asyncio.run(_client(stand_in).generate(TRANSCRIPT[:2], TOOLS, GenerateConfig(temperature=0.2)))
    assert out.text.startswith("```json") and out.tool_calls == ()
    assert stand_in.requests[-1]["temperature"] == 0.2


@pytest.mark.parametrize("status", [429, 500, 400])
def test_provider_faults_raise_provider_error_after_one_attempt(stand_in: StandIn, status: int) -> None:
    before = len(stand_in.requests)
    error = {"error": {"message": "nope", "type": "server_error", "code": str(status)}}
    stand_in.replies.extend([(status, error, {"retry-after": "3"})] * 4)
    with pytest.raises(ProviderError) as info:
        asyncio.run(_client(stand_in).generate(TRANSCRIPT[:2], TOOLS, GenerateConfig()))
    assert isinstance(info.value, LiteLLMProviderError) and info.value.status_code == status
    assert len(stand_in.requests) - before == 1  # no hidden retry layer: retries belong to the runner
    stand_in.replies.clear()


def test_context_window_overflow_is_raised_as_the_models_limit(stand_in: StandIn) -> None:
    # The body llama-cpp-python's server (and OpenAI) send when the prompt outgrows the context.
    message = "This model's maximum context length is 8192 tokens, however you requested 8212 tokens"
    error = {
        "error": {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}
    }
    stand_in.replies.append((400, error, {}))
    with pytest.raises(ContextWindowExceeded) as info:
        asyncio.run(_client(stand_in).generate(TRANSCRIPT[:2], TOOLS, GenerateConfig()))
    assert "8192" in str(info.value) and not isinstance(info.value, ProviderError)
    stand_in.replies.clear()


def test_retry_hook_sees_raw_errors_and_its_log_is_returned(stand_in: StandIn) -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    error = {"error": {"message": "slow down", "type": "rate_limit", "code": "429"}}
    stand_in.replies.extend(
        [(429, error, {"retry-after": "0"}), (200, _completion({"content": "hi"}, usage), {})]
    )

    async def hook(attempt: Any, log: list[dict[str, Any]]) -> Any:
        for n in range(1, 4):
            try:
                return await attempt()
            except Exception as exc:  # the runner's tenacity layer classifies; here: always retry
                log.append(
                    {"attempt": n, "error": type(exc).__name__, "status": getattr(exc, "status_code", None)}
                )
        raise AssertionError("unreachable")

    client = LiteLLMClient("openai/stand-in", {"api_base": stand_in.api_base, "api_key": "k"}, retry=hook)
    out = asyncio.run(client.generate(TRANSCRIPT[:2], TOOLS, GenerateConfig()))
    assert out.text == "hi" and out.retries == ({"attempt": 1, "error": "RateLimitError", "status": 429},)


def test_connection_refused_is_a_provider_error() -> None:
    configure_litellm()
    client = LiteLLMClient(
        "openai/stand-in", {"api_base": "http://127.0.0.1:9/v1", "api_key": "k", "timeout": 5}
    )
    with pytest.raises(ProviderError):
        asyncio.run(client.generate(TRANSCRIPT[:2], TOOLS, GenerateConfig()))


def test_message_conversion_and_argument_parsing() -> None:
    converted = to_openai_messages(TRANSCRIPT + [{"role": "assistant", "content": []}])
    assert converted[2]["content"] == "Looking." and converted[-1] == {"role": "assistant", "content": None}
    assert parse_arguments("") == {} and parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("[1]") == "[1]" and parse_arguments("{oops") == "{oops"


def test_anthropic_style_usage_splits_cache_reads_and_writes() -> None:
    configure_litellm()
    import litellm

    from apiflow.models.provider_fields import usage_from_response

    usage = litellm.Usage(
        prompt_tokens=26 + 85_791 + 5_492,
        completion_tokens=2_829,
        total_tokens=94_138,
        cache_read_input_tokens=85_791,
        cache_creation_input_tokens=5_492,
    )
    assert usage_from_response(usage) == Usage(input=26, output=2_829, cache_read=85_791, cache_write=5_492)
    assert usage_from_response(None) == Usage()
