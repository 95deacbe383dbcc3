"""A stand-in provider on 127.0.0.1 that plays the offline models, in OpenAI's and Anthropic's shapes.

Tests and benchmarks point litellm at it (``openai/apiflow/sim:ace`` with ``api_base``), so the
real provider path — litellm, the retry layer, the shared rate limiter — runs against real HTTP
with the faults providers have: RPM/TPM limits answered with 429 + ``Retry-After``, 5xx,
hung requests (timeouts), malformed tool-call JSON and empty replies. It is stateless: each
request rebuilds the offline model for the conversation's task and replays the conversation,
so retries and concurrent trials of one task always get consistent answers.

It also answers ``POST /v1/responses`` in the OpenAI Responses shape (``openai/responses/<model>``:
reasoning items with encrypted content; ``apiflow.testing.standin_responses``) and
``POST /v1/messages`` in the Anthropic Messages shape (``anthropic/apiflow/sim:ace``
with ``api_base`` = the server root; signed thinking blocks, ``tool_use``/``tool_result``, cache
read/write usage; ``apiflow.testing.standin_anthropic``), and with ``reasoning`` the OpenAI side
returns ``reasoning_content`` and ``reasoning_tokens`` as open-weight reasoning models do. Both
wires refuse, with a 400 in the real error shape, what live APIs refuse: orphan tool results,
unanswered tool calls, empty content, and a tool loop whose assistant turn lost its thinking
block / signature / ``reasoning_content`` (docs/design/046-provider-fidelity.md).

Both providers' batch APIs are served too (``apiflow.testing.standin_batches``): OpenAI's Files +
Batch API (``/v1/files``, ``/v1/batches``) and Anthropic's Message Batches (``/v1/messages/batches``),
each request answered by the synchronous code and billed on the stats' ``batch`` tier.

This module is the HTTP side (one asyncio loop, keep-alive connections, the CLI); what a request is
answered with lives in ``apiflow.testing.standin_provider``.

    python -m apiflow.testing.standin_server --bank bank/sample --port 8099 --rpm 600 --p-500 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
from dataclasses import asdict
from http import HTTPStatus
from typing import Any

from apiflow.testing.standin_batches import route as batch_route
from apiflow.testing.standin_config import StandinConfig, Wire
from apiflow.testing.standin_openai import error_body as _error
from apiflow.testing.standin_provider import StandinProvider

_REASONS = {status.value: status.phrase for status in HTTPStatus}
LISTEN_BACKLOG = 4096
"""Listen backlog: a thousand clients connecting at once must not see SYN drops (the default of
a few turns into seconds-long connect retries)."""


def _frame(status: int, headers: dict[str, str], body: dict[str, Any] | str | bytes) -> bytes:
    """One response: a dict as JSON, a str or bytes as they are (``headers`` may set the content type)."""
    if isinstance(body, bytes):
        data = body
    else:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    kind = headers.get("content-type", "application/json")
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}", f"content-type: {kind}",
            f"content-length: {len(data)}",
            *(f"{key}: {value}" for key, value in headers.items() if key != "content-type")]  # fmt: skip
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data


class _Connection:
    """One client connection: HTTP/1.1 requests one after another (keep-alive), on the server's loop."""

    def __init__(self, provider: StandinProvider) -> None:
        self.provider = provider

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, headers, raw = request
                answer = await self._answer(method, path, headers, raw)
                if answer is None:  # a hung request: drop the connection as a dead upstream would
                    break
                writer.write(answer)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()

    async def _answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> bytes | None:
        provider = self.provider
        path = target.split("?", 1)[0].rstrip("/")
        batch = batch_route(provider.batches, method, target, headers, raw)
        if batch is not None:
            return _frame(*batch)
        if method == "GET":
            if path.endswith("/stats"):  # answer times: GET /stats/times (they are many)
                provider.batches.settle_all()  # what is due in the batches is done (and billed) by now
                series: dict[str, list[Any]] = {"answered_at": [], "in_flight_at": [], "limited_at": []}
                return _frame(200, {}, asdict(provider.stats) | series)
            if path.endswith("/stats/times"):
                with provider.lock:
                    times = {
                        "answered_at": list(provider.stats.answered_at),
                        "in_flight_at": list(provider.stats.in_flight_at),
                        "limited_at": list(provider.stats.limited_at),
                    }
                    return _frame(200, {}, times)
            if path.endswith("/models"):
                return _frame(200, {}, {"object": "list", "data": []})
            return _frame(404, {}, _error("not_found", target))
        if method != "POST":
            return _frame(405, {}, _error("method_not_allowed", method))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return _frame(400, {}, _error("invalid_request_error", "body is not JSON"))
        if path.endswith("chat/completions"):
            wire: Wire = "openai"
        elif path.endswith("/v1/messages"):
            wire = "anthropic"
        elif path.endswith("/responses"):
            wire = "responses"
        else:
            return _frame(404, {}, _error("not_found", target))
        auth = headers.get("authorization") or headers.get("x-api-key") or ""
        status, extra, payload = await provider.ahandle(body, auth, wire)
        return None if payload is None else _frame(status, extra, payload)


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes] | None:
    """``(method, target, headers, body)`` of the next request, None at the end of the connection."""
    line = await reader.readline()
    if not line.strip():
        return None
    method, target = line.decode("latin-1").split()[:2]
    headers: dict[str, str] = {}
    while (field_line := await reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = field_line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
            chunks.append(await reader.readexactly(size))
            await reader.readline()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):  # trailer fields
            pass
        return method, target, headers, b"".join(chunks)
    length = int(headers.get("content-length") or 0)
    return method, target, headers, await reader.readexactly(length) if length else b""


class StandinServer:
    """The HTTP server on an event loop in a background thread: ``with StandinServer(cfg) as url: ...``.

    One asyncio loop serves every connection: a request waiting out its latency (or hanging) is
    a sleeping task, not a thread. With a thread per request, a thousand requests waking from
    their latency at once fought over the GIL and cost the stand-in many times a request's own CPU
    (bench/bench_concurrency.py; docs/results/043-retries-and-rate-limits-measurements.md).

    Args:
        config: Behaviour.
        port: Port on 127.0.0.1 (0: any free port).
    """

    def __init__(self, config: StandinConfig | None = None, port: int = 0) -> None:
        self.provider = StandinProvider(config or StandinConfig())
        self.socket = socket.create_server(("127.0.0.1", port), backlog=LISTEN_BACKLOG)
        self.port: int = self.socket.getsockname()[1]
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self._started = threading.Event()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """Base URL for litellm's ``api_base`` on ``openai/`` routes (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        """Base URL for litellm's ``api_base`` on ``anthropic/`` routes (it appends ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await _Connection(self.provider).serve(reader, writer)
        except asyncio.CancelledError:
            pass  # the server is stopping: a kept-alive connection ends here, not as a logged error
        finally:
            if task is not None:
                self._tasks.discard(task)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self._server = self.loop.run_until_complete(
            asyncio.start_server(self._client, sock=self.socket, limit=2**20)
        )
        self._started.set()
        try:
            self.loop.run_forever()
        finally:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*self._tasks, return_exceptions=True))
            self.loop.close()

    def start(self) -> str:
        self.thread.start()
        self._started.wait()
        return self.url

    def stop(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)
        else:
            self.socket.close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted (``python -m apiflow.testing.standin_server``)."""
    parser = argparse.ArgumentParser(prog="python -m apiflow.testing.standin_server")
    parser.add_argument("--port", type=int, default=0)
    for name, kind in (("bank", str), ("latency-s", float), ("rpm", float), ("tpm", float), ("burst-s", float),
                       ("p-429", float), ("p-500", float), ("p-timeout", float), ("timeout-s", float),
                       ("p-malformed", float), ("p-empty", float), ("seed", int), ("p-garbage", float),
                       ("retry-after-s", float), ("batch-latency-s", float), ("batch-expire-s", float),
                       ("p-batch-fail", float)):  # fmt: skip
        parser.add_argument(f"--{name}", type=kind)
    parser.add_argument("--reasoning", action="store_true", default=None,
                        help="OpenAI wire: reply with reasoning_content and demand it back in tool loops")  # fmt: skip
    parser.add_argument("--require-content", action="store_true", default=None,
                        help="OpenAI wire: fail a message without 'content' as llama-cpp-python does (500)")  # fmt: skip
    parser.add_argument("--play", action="append", default=[], metavar="NAME=MODEL",
                        help="answer requests for model NAME with the offline MODEL (repeatable)")  # fmt: skip
    args = vars(parser.parse_args(argv))
    port = args.pop("port")
    plays = [tuple(item.split("=", 1)) for item in args.pop("play")]
    if any(len(pair) != 2 or not all(pair) for pair in plays):
        parser.error("--play takes NAME=MODEL")
    args["plays"] = tuple(plays) or None
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
