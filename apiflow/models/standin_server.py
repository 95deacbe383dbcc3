"""An OpenAI-compatible stand-in provider on 127.0.0.1 that plays the offline models.

Tests and benchmarks point litellm at it (``openai/apiflow/sim:ace`` with ``api_base``), so the
real provider path — litellm, the retry layer, the shared rate limiter — runs against real HTTP
with the faults providers have: RPM/TPM limits answered with 429 + ``Retry-After``, 5xx,
hung requests (timeouts), malformed tool-call JSON and empty replies. It is stateless: each
request rebuilds the offline model for the conversation's task and replays the conversation,
so retries and concurrent trials of one task always get consistent answers.

    python -m apiflow.models.standin_server --bank bank/sample --port 8099 --rpm 600 --p-500 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from apiflow.agent.prompts import user_message
from apiflow.bank import DEFAULT_BANK, Task, load_bank
from apiflow.models.base import GenerateConfig, ModelOutput
from apiflow.models.registry import make_model

_CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class StandinConfig:
    """Behaviour of the stand-in provider.

    Attributes:
        bank: Bank whose tasks the conversations come from.
        latency_s: Delay before each answer.
        rpm / tpm: Limits (None: unlimited); over them the answer is 429 with ``Retry-After``.
        burst_s: Seconds of traffic a full limit bucket holds.
        p_429 / p_500 / p_timeout / p_malformed / p_empty: Probability per request of each fault.
        timeout_s: How long a "timeout" request hangs before the connection is dropped.
        seed: Seed of the fault dice.
        echo_auth: Opt-in (secrets tests): fault bodies quote the request's ``Authorization`` /
            ``x-api-key`` header back, as careless real providers do, so the harness's redaction
            of recorded provider errors has something to catch (tests/security/).
        p_garbage: Probability per request of a 200 whose body is not JSON (a broken proxy).
        retry_after_s: The ``Retry-After`` an injected 429 (``p_429``) asks for (limit 429s ask
            for the real wait).
    """

    bank: str = str(DEFAULT_BANK)
    latency_s: float = 0.0
    rpm: float | None = None
    tpm: float | None = None
    burst_s: float = 1.0
    p_429: float = 0.0
    p_500: float = 0.0
    p_timeout: float = 0.0
    timeout_s: float = 30.0
    p_malformed: float = 0.0
    p_empty: float = 0.0
    seed: int = 0
    echo_auth: bool = False
    p_garbage: float = 0.0
    retry_after_s: float = 1.0


@dataclass
class StandinStats:
    """Counters, readable at ``GET /stats``."""

    requests: int = 0
    answered: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    timeouts: int = 0
    malformed: int = 0
    empty: int = 0
    garbage: int = 0
    billed_input: int = 0
    """Tokens of answered requests by priced kind: what a real provider would bill (the chaos
    suite's independent measure of true spend, killed attempts included)."""
    billed_output: int = 0
    billed_cache_read: int = 0
    answered_at: list[float] = field(default_factory=list)


class _Limiter:
    """Server-side RPM/TPM buckets (the provider's view of the limit)."""

    def __init__(self, rpm: float | None, tpm: float | None, burst_s: float) -> None:
        now = time.monotonic()
        self.buckets = [
            [rate / 60.0, max(1.0, rate / 60.0 * burst_s), max(1.0, rate / 60.0 * burst_s), now]
            for rate in (rpm, tpm)
            if rate
        ]
        self.kinds = [k for k, rate in (("requests", rpm), ("tokens", tpm)) if rate]
        self.lock = threading.Lock()

    def admit(self, tokens: float) -> float | None:
        """None when admitted, else seconds until the request would fit."""
        with self.lock:
            now = time.monotonic()
            waits = []
            for bucket, kind in zip(self.buckets, self.kinds, strict=True):
                rate, cap, level, stamp = bucket
                level = min(cap, level + (now - stamp) * rate)
                bucket[2], bucket[3] = level, now
                need = 1.0 if kind == "requests" else min(tokens, cap)
                if level < need:
                    waits.append((need - level) / rate)
            if waits:
                return max(waits)
            for bucket, kind in zip(self.buckets, self.kinds, strict=True):
                bucket[2] -= 1.0 if kind == "requests" else min(tokens, bucket[1])
            return None


def _from_openai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages -> schema-1.0 messages (what the offline models read)."""
    converted = []
    for m in messages:
        if m["role"] == "assistant":
            calls = []
            for c in m.get("tool_calls") or ():
                raw = c["function"].get("arguments") or ""
                try:
                    args: Any = json.loads(raw) if raw else {}
                except ValueError:
                    args = raw
                calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args})
            item: dict[str, Any] = {"role": "assistant", "content": m.get("content") or ""}
            if calls:
                item["tool_calls"] = calls
            converted.append(item)
        elif m["role"] == "tool":
            converted.append(
                {"role": "tool", "content": m.get("content") or "", "tool_call_id": m.get("tool_call_id")}
            )
        else:
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
            converted.append({"role": m["role"], "content": content or ""})
    return converted


class StandinProvider:
    """The request logic, independent of HTTP (the handler below is a thin adapter)."""

    def __init__(self, config: StandinConfig) -> None:
        self.config = config
        bank = load_bank(config.bank)
        self.tasks: dict[str, Task] = {user_message(t): t for t in bank.tasks.values()}
        self.limiter = _Limiter(config.rpm, config.tpm, config.burst_s)
        self.stats = StandinStats()
        self.dice = random.Random(config.seed)
        self.lock = threading.Lock()

    def _roll(self) -> float:
        with self.lock:
            return self.dice.random()

    def _count(self, name: str) -> None:
        with self.lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)
            if name == "answered":
                self.stats.answered_at.append(time.monotonic())

    def handle(
        self, body: dict[str, Any], auth: str = ""
    ) -> tuple[int, dict[str, str], dict[str, Any] | str | None]:
        """``(status, headers, json body)``; a None body means "hang up without answering", a str
        body is sent as it is (not JSON).

        ``auth`` is the request's credential header, quoted in fault bodies only with ``echo_auth``.
        """
        self._count("requests")
        c = self.config
        echo = f" (request credentials: {auth})" if c.echo_auth and auth else ""
        messages = body.get("messages") or []
        prompt_tokens = sum(len(json.dumps(m)) for m in messages) // _CHARS_PER_TOKEN
        wait = self.limiter.admit(prompt_tokens + int(body.get("max_tokens") or 0) // 8)
        if wait is None and c.p_429 and self._roll() < c.p_429:
            wait = c.retry_after_s
        if wait is not None:
            self._count("rate_limited")
            headers = {
                "retry-after": str(max(1, math.ceil(wait))),  # whole seconds (RFC 9110); -ms is exact
                "retry-after-ms": str(int(wait * 1000) + 1),
            }
            return 429, headers, _error("rate_limit_exceeded", "Rate limit reached for requests" + echo)
        if c.p_500 and self._roll() < c.p_500:
            self._count("server_errors")
            message = "The server had an error while processing your request" + echo
            return 500, {}, _error("server_error", message)
        if c.p_garbage and self._roll() < c.p_garbage:
            self._count("garbage")
            return 200, {}, "<html>upstream proxy error" + echo + "</html>"
        if c.p_timeout and self._roll() < c.p_timeout:
            self._count("timeouts")
            time.sleep(c.timeout_s)
            return 0, {}, None
        if c.latency_s:
            time.sleep(c.latency_s)
        try:
            output = self._play(body["model"], _from_openai(messages), body.get("tools") or [])
        except LookupError as exc:
            return 400, {}, _error("invalid_request_error", str(exc) + echo)
        completion = self._completion(body["model"], output)
        self._count("answered")
        self._bill(output)
        return 200, {}, completion

    def _bill(self, output: ModelOutput) -> None:
        with self.lock:
            self.stats.billed_input += output.usage.input
            self.stats.billed_output += output.usage.output
            self.stats.billed_cache_read += output.usage.cache_read

    def _play(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelOutput:
        user = next((m["content"] for m in messages if m["role"] == "user"), None)
        task = self.tasks.get(user or "")
        if task is None:
            raise LookupError("the stand-in only knows conversations about its bank's tasks")
        seed = int(hashlib.sha256(f"{model}|{task.id}".encode()).hexdigest()[:12], 16)
        player = make_model(model, task, seed)
        config = GenerateConfig()
        # Stateless: replay every earlier assistant turn so the scripted model is where the conversation is.
        turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]

        async def replay() -> ModelOutput:
            for index in turns:
                await player.generate(messages[:index], tools, config)
            return await player.generate(messages, tools, config)

        return asyncio.run(replay())

    def _completion(self, model: str, output: ModelOutput) -> dict[str, Any]:
        c = self.config
        calls: list[dict[str, Any]] = [
            {"id": tc.id, "type": "function",
             "function": {"name": tc.name, "arguments": tc.arguments if isinstance(tc.arguments, str)
                          else json.dumps(tc.arguments, ensure_ascii=False)}}
            for tc in output.tool_calls
        ]  # fmt: skip
        text = output.text
        if calls and c.p_malformed and self._roll() < c.p_malformed:
            self._count("malformed")
            calls[0]["function"]["arguments"] = calls[0]["function"]["arguments"][:-1] or "{"
        if c.p_empty and self._roll() < c.p_empty:
            self._count("empty")
            calls, text = [], ""
        usage = output.usage
        prompt = usage.input + usage.cache_read
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": usage.output,
                "total_tokens": prompt + usage.output,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read},
            },
        }


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": kind}}


class _Handler(BaseHTTPRequestHandler):
    provider: StandinProvider
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet: tests read /stats instead
        pass

    def _send(self, status: int, headers: dict[str, str], body: dict[str, Any] | str) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/").endswith("/stats"):
            self._send(200, {}, asdict(self.provider.stats) | {"answered_at": []})
        elif self.path.rstrip("/").endswith("/models"):
            self._send(200, {}, {"object": "list", "data": []})
        else:
            self._send(404, {}, _error("not_found", self.path))

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, {}, _error("invalid_request_error", "body is not JSON"))
            return
        if not self.path.rstrip("/").endswith("chat/completions"):
            self._send(404, {}, _error("not_found", self.path))
            return
        auth = self.headers.get("authorization") or self.headers.get("x-api-key") or ""
        status, headers, payload = self.provider.handle(body, auth)
        if payload is None:  # a hung request: drop the connection as a dead upstream would
            self.close_connection = True
            return
        self._send(status, headers, payload)


class StandinServer:
    """The HTTP server in a background thread: ``with StandinServer(cfg) as url: ...``.

    Args:
        config: Behaviour.
        port: Port on 127.0.0.1 (0: any free port).
    """

    def __init__(self, config: StandinConfig | None = None, port: int = 0) -> None:
        self.provider = StandinProvider(config or StandinConfig())
        handler = type("Handler", (_Handler,), {"provider": self.provider})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL for litellm's ``api_base`` (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> str:
        self.thread.start()
        return self.url

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted (``python -m apiflow.models.standin_server``)."""
    parser = argparse.ArgumentParser(prog="python -m apiflow.models.standin_server")
    parser.add_argument("--port", type=int, default=0)
    for name, kind in (("bank", str), ("latency-s", float), ("rpm", float), ("tpm", float), ("burst-s", float),
                       ("p-429", float), ("p-500", float), ("p-timeout", float), ("timeout-s", float),
                       ("p-malformed", float), ("p-empty", float), ("seed", int), ("p-garbage", float),
                       ("retry-after-s", float)):  # fmt: skip
        parser.add_argument(f"--{name}", type=kind)
    args = vars(parser.parse_args(argv))
    port = args.pop("port")
    config = StandinConfig(**{k: v for k, v in args.items() if v is not None})
    server = StandinServer(config, port)
    print(server.start(), flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
