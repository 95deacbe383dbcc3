"""The ways a trial's MCP server meets its agent: this process's stdio, a child's pipes, HTTP.

Each runs the SDK server until the agent's side closes, then tells the bridge (the next turn is
an empty one). Streamable HTTP binds 127.0.0.1 only (the SDK then also checks ``Host`` and
``Origin``, against DNS rebinding).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, Protocol

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from apiflow.mcp.bridge import AgentBridge

HOST = "127.0.0.1"
MCP_PATH = "/mcp"
_MAX_LINE = 64 * 1024 * 1024
"""Longest JSON-RPC line read from an agent's pipe (a bound, like every model input's)."""

logger = logging.getLogger(__name__)


class ByteSink(Protocol):
    """Where ``serve_pipes`` writes (an agent's stdin); raises ``anyio.BrokenResourceError`` once closed."""

    async def send(self, data: bytes) -> None: ...


async def serve_stdio(server: Server[Any], bridge: AgentBridge) -> None:
    """Serve the agent on this process's stdin/stdout (``apiflow world serve --mcp``)."""
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        bridge.session_closed()


async def serve_pipes(
    server: Server[Any], bridge: AgentBridge, agent_out: AsyncIterable[bytes], agent_in: ByteSink
) -> None:
    """Serve the agent on its own stdout/stdin (an external agent started with ``transport: stdio``).

    The SDK's stdio transport serves only this process's standard streams, so this is the same
    framing (one JSON-RPC message per line) over a child's pipes.
    """
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with read_writer:
            buffer = b""
            async for chunk in agent_out:
                buffer += chunk
                if len(buffer) > _MAX_LINE:
                    logger.warning("external agent sent a line over %d bytes; closing its session", _MAX_LINE)
                    return
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        await read_writer.send(_parse(line))

    async def writer() -> None:
        async with write_reader:
            async for message in write_reader:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await agent_in.send(data.encode())

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            await server.run(read_stream, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()
    finally:
        bridge.session_closed()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except Exception as exc:  # noqa: BLE001 - a bad frame goes to the SDK, which answers it as an error
        return exc


class _OneSession:
    """ASGI guard of one trial's endpoint: the first MCP session is the trial's; a request of any other
    session (a second client on this machine) is refused with 403. With the URL's secret path (only
    the launched agent is told it), no other local client reaches the trial, nor steals it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.session: bytes | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        asked = dict(scope.get("headers") or ()).get(b"mcp-session-id")
        if self.session is not None and asked != self.session:
            body = b'{"error": "this trial serves one session"}'
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})  # fmt: skip
            await send({"type": "http.response.body", "body": body})
            return

        async def remember(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and self.session is None:
                issued = dict(message.get("headers") or ()).get(b"mcp-session-id")
                if issued:
                    self.session = issued
            await send(message)

        await self.app(scope, receive, remember)


@contextlib.asynccontextmanager
async def http_endpoint(server: Server[Any], port: int = 0) -> AsyncIterator[str]:
    """Serve streamable HTTP on 127.0.0.1:``port`` (0: a free one) while inside; yields the URL.

    The URL's path holds a per-trial secret and the endpoint serves the first session only
    (``_OneSession``): another local process cannot read the trial's task or ``finish`` it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None
    path = f"/{secrets.token_urlsafe(16)}{MCP_PATH}"
    app = _OneSession(server.streamable_http_app(streamable_http_path=path, host=HOST))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve(sockets=[sock]))
    try:
        while not web.started:
            if task.done():
                task.result()  # startup failed: raise its error
                raise RuntimeError("the MCP HTTP server stopped while starting")
            await asyncio.sleep(0.01)
        yield f"http://{HOST}:{sock.getsockname()[1]}{path}"
    finally:
        web.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=10)
        sock.close()
