"""``external/<label>``: an agent that runs outside apiflow and plays the trial over MCP.

A grid's model entry says how to reach it (``params``, never part of the trial id):

- ``{"command": ["python", "agent.py"], "transport": "http"}`` (the default transport): per
  trial, apiflow serves the trial on a streamable-HTTP URL on 127.0.0.1 and starts the command
  with ``APIFLOW_MCP_URL`` in its environment;
- ``{"command": [...], "transport": "stdio"}``: the command's stdin/stdout are the MCP channel
  (apiflow serves, the agent is the client on its own standard streams);
- ``{"endpoint": "http://host:port/run"}``: an agent service; apiflow POSTs ``{"mcp_url"}`` as
  JSON and the service connects back to that URL (so it must run on this machine: the URL is
  loopback).

The agent learns its task only through the MCP session (the server's instructions and its
``task`` prompt): no task id reaches it before it connects.

**A command's environment is minimal, not the harness's.** It gets ``PATH``, ``HOME``, ``LANG``,
``LC_*`` and ``TMPDIR`` (those set, and none credential-named), ``APIFLOW_MCP_URL`` over http, and
only what the grid names for this agent:

- ``env``: a mapping of names to values, set as given;
- ``pass_env``: a list of names copied from the harness's environment when set there
  (``["OPENAI_API_KEY"]`` for an agent that calls OpenAI itself).

So a provider key (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``AWS_*``, anything
``apiflow.redact.is_secret_name`` calls a credential) reaches an agent only when named there.

Optional too: ``connect_timeout_s`` (default 120: the agent must make its first MCP request by
then), ``grace_s`` (default 5: how long a command may take to leave after the trial before it is
stopped).

Whose fault is what (docs/design/081-mcp.md): an agent that cannot be started is a
``provider_error`` (the grid's configuration failed: retried on resume); one that exits or never
connects before its first request is the agent's outcome (``AgentFault``: ``no_answer``, graded,
so leaving early cannot dodge a task); once connected, an agent that crashes or closes without
``finish`` has stopped talking (an empty turn: ``no_answer``, graded) and one that never
finishes meets the trial's time limit (``limit`` ``time``). Bugs in the bridge are harness errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from apiflow.agent.prompts import initial_messages
from apiflow.bank.task import Task
from apiflow.errors import UsageError
from apiflow.models.base import AgentFault, GenerateConfig, ModelOutput, ProviderError
from apiflow.redact import is_secret_name, secrets_in

Transport = Literal["http", "stdio"]
_PARAMS = {"command", "transport", "endpoint", "env", "pass_env", "connect_timeout_s", "grace_s"}
URL_ENV = "APIFLOW_MCP_URL"
BASE_ENV = frozenset({"PATH", "HOME", "LANG", "TMPDIR"})
"""What every command inherits from the harness's environment (with ``LC_*``): enough to run a
program, nothing that authenticates anywhere."""
_TIMEOUTS = {"connect_timeout_s": 120.0, "grace_s": 5.0}

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ExternalAgentConfig:
    """How to reach one external agent (a grid model entry's ``params``, checked)."""

    command: tuple[str, ...] = ()
    transport: Transport = "http"
    endpoint: str = ""
    env: dict[str, str] = field(default_factory=dict)
    pass_env: tuple[str, ...] = ()
    connect_timeout_s: float = 120.0
    grace_s: float = 5.0


def agent_config(name: str, params: dict[str, Any] | None) -> ExternalAgentConfig:
    """Check an external model's params; ``UsageError`` names what is wrong."""
    p = dict(params or {})
    unknown = set(p) - _PARAMS
    if unknown:
        raise UsageError(f"{name}: unknown params {sorted(unknown)}; known: {sorted(_PARAMS)}")
    command, endpoint = p.get("command"), p.get("endpoint", "")
    if isinstance(command, str):
        command = [command]
    if (command is None) == (not endpoint):
        raise UsageError(
            f"{name} needs exactly one of params.command (a list of strings) or params.endpoint (a URL)"
        )
    if command is not None and (not command or not all(isinstance(a, str) and a for a in command)):
        raise UsageError(f"{name}: params.command must be a non-empty list of strings")
    if endpoint and (not isinstance(endpoint, str) or not endpoint.startswith(("http://", "https://"))):
        raise UsageError(f"{name}: params.endpoint must be an http(s) URL")
    transport = p.get("transport", "http")
    if transport not in ("http", "stdio") or (endpoint and transport != "http"):
        raise UsageError(f"{name}: params.transport is http or stdio (an endpoint is reached over http)")
    env = p.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise UsageError(f"{name}: params.env must map names to strings")
    pass_env = p.get("pass_env", [])
    if (
        isinstance(pass_env, str)
        or not isinstance(pass_env, list | tuple)
        or not all(isinstance(k, str) and k and "=" not in k for k in pass_env)
    ):
        raise UsageError(f"{name}: params.pass_env must be a list of environment variable names")
    timeouts = {k: p.get(k, default) for k, default in _TIMEOUTS.items()}
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in timeouts.values()):
        raise UsageError(f"{name}: params.connect_timeout_s and params.grace_s must be positive numbers")
    return ExternalAgentConfig(
        command=tuple(command or ()), transport=transport, endpoint=endpoint, env=env,
        pass_env=tuple(pass_env), **timeouts,
    )  # fmt: skip


def agent_environment(
    config: ExternalAgentConfig, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A command's environment: ``BASE_ENV`` and ``LC_*`` (never a credential-named one), the
    ``pass_env`` names that are set in ``environ`` (default ``os.environ``), then ``env``."""
    source = os.environ if environ is None else environ
    base = {
        k: v for k, v in source.items() if (k in BASE_ENV or k.startswith("LC_")) and not is_secret_name(k)
    }
    passed = {k: source[k] for k in config.pass_env if k in source}
    return {**base, **passed, **config.env}


def external_model(name: str, task: Task, seed: int, params: dict[str, Any] | None) -> ExternalAgent:
    """Build the model of one trial of ``task`` with the external agent ``name`` (``external/<label>``).

    Raises:
        UsageError: Bad params, or the MCP SDK (the ``mcp`` extra) is not installed.
    """
    config = agent_config(name, params)
    try:
        import mcp  # noqa: F401 - fail here, as a usage error, rather than inside the trial
    except ImportError:
        raise UsageError(f"{name} needs the MCP SDK: pip install -e '.[mcp]'") from None
    return ExternalAgent(name, task, config, frozenset(secrets_in(params or {})))


class ExternalAgent:
    """The ``ModelClient`` of an external agent: one MCP server and one agent per trial.

    Started on the first ``generate``; ``end_trial`` (run by ``run_trial`` after the loop)
    answers the agent's last calls, gives it ``grace_s`` to leave, then stops it and the server.
    ``secrets`` (its params' credential values) redact any error text its trial records.
    """

    def __init__(
        self, name: str, task: Task, config: ExternalAgentConfig, secrets: frozenset[str] = frozenset()
    ) -> None:
        from apiflow.mcp.bridge import AgentBridge

        self.model_api = name
        self.task, self.config = task, config
        self.secrets = secrets
        self.bridge = AgentBridge(name, initial_messages(task))
        self._stack = contextlib.AsyncExitStack()
        self._process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._started = False

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        """The agent's next turn (the first call starts the server and the agent)."""
        if not self._started:
            self._started = True
            await self._start()
        return await self.bridge.generate(messages, tools, config)

    async def _start(self) -> None:
        from apiflow.mcp.server import build_server
        from apiflow.mcp.transports import http_endpoint, serve_pipes

        server = build_server(self.bridge)
        env = agent_environment(self.config)
        if self.config.transport == "stdio":
            self._process = await self._spawn(env, pipes=True)
            assert self._process.stdout is not None and self._process.stdin is not None
            out, into = _ByteReader(self._process.stdout), _ByteWriter(self._process.stdin)
            self._tasks.append(asyncio.create_task(serve_pipes(server, self.bridge, out, into)))
        else:
            url = await self._stack.enter_async_context(http_endpoint(server))
            if self.config.command:
                self._process = await self._spawn({**env, URL_ENV: url}, pipes=False)
            else:
                await asyncio.to_thread(_post_json, self.config.endpoint, {"mcp_url": url})
        if self._process is not None:
            self._tasks.append(asyncio.create_task(self._watch(self._process)))
        await self._await_contact()

    async def _spawn(self, env: dict[str, str], *, pipes: bool) -> asyncio.subprocess.Process:
        pipe = asyncio.subprocess.PIPE if pipes else asyncio.subprocess.DEVNULL
        try:
            return await asyncio.create_subprocess_exec(
                *self.config.command, stdin=pipe, stdout=pipe, env=env, start_new_session=True
            )
        except OSError as exc:
            raise ProviderError(
                f"{self.model_api}: cannot start {self.config.command[0]!r}: {exc.strerror}"
            ) from None

    async def _watch(self, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        if code:
            logger.warning("%s exited with code %s during trial of %s", self.model_api, code, self.task.id)
        self.bridge.session_closed()

    async def _await_contact(self) -> None:
        """Wait for the agent's first MCP request; an agent that never makes one never played."""
        try:
            async with asyncio.timeout(self.config.connect_timeout_s):
                while not self.bridge.contacted.is_set():
                    if self._process is not None and self._process.returncode is not None:
                        raise AgentFault(
                            f"{self.model_api} exited (code {self._process.returncode}) before it connected"
                        )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.bridge.contacted.wait(), 0.2)
        except TimeoutError:
            raise AgentFault(
                f"{self.model_api} made no MCP request within {self.config.connect_timeout_s:g} s"
            ) from None

    async def end_trial(self, messages: list[dict[str, Any]]) -> None:
        """Answer the agent's last calls, let it leave (``grace_s``), then stop it and the server."""
        await self.bridge.end_trial(messages)
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), self.config.grace_s)
            await _stop(process)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._stack.aclose()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM, then SIGKILL after 5 s, of the agent's whole process group (it may fork)."""
    for sig in ("terminate", "kill"):
        if process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 15 if sig == "terminate" else 9)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 5)


def _post_json(url: str, body: dict[str, Any]) -> None:
    """Tell an agent service where its trial is; any failure means the agent never played."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the grid's own endpoint
            response.read()
    except OSError as exc:
        raise ProviderError(f"agent endpoint {url} refused the trial: {exc}") from None


class _ByteReader:
    """An asyncio pipe as the byte stream ``serve_pipes`` reads (iteration ends at EOF)."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream

    def __aiter__(self) -> _ByteReader:
        return self

    async def __anext__(self) -> bytes:
        chunk = await self._stream.read(65536)
        if not chunk:
            raise StopAsyncIteration
        return chunk


class _ByteWriter:
    """An asyncio pipe as the byte sink ``serve_pipes`` writes to."""

    def __init__(self, stream: asyncio.StreamWriter) -> None:
        self._stream = stream

    async def send(self, data: bytes) -> None:
        try:
            self._stream.write(data)
            await self._stream.drain()
        except (BrokenPipeError, ConnectionResetError):
            import anyio

            raise anyio.BrokenResourceError from None
