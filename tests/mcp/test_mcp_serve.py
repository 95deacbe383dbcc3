"""``apiflow world serve --mcp`` driven by the SDK's own client, over stdio and streamable HTTP.

Each test starts the real command in a subprocess and plays it with ``mcp.Client`` (the SDK's
stdio and streamable-HTTP clients); the written record must equal the in-process one apart from
wall time, ``model_api`` and the trial id that hashes it.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcpkit import SLUG, comparable, in_process

from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.bank.task import GoldenCall, Task
from apiflow.mcp.agent import play
from apiflow.models.base import ModelClient
from apiflow.models.offline import PlannedCall, ScriptedModel, Turn, blank_model, golden_turns, oracle_model
from apiflow.tools import tool_schemas

CHAIN = "sample-w01-chain-1to05"  # salted values, cut previews, 20+ calls
SOLO = "sample-w01-sub01"


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


def _serve_args(task_id: str, out: Path, *extra: str) -> list[str]:
    return ["-m", "apiflow.cli", "world", "serve", "--mcp", "--task", task_id, "--out", str(out), *extra]


def _record(out: Path, task_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / SLUG / f"{task_id}-t1.json").read_text())
    return data


def _listed_as_openai(tools: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        }
        for t in tools
    ]


async def _play_stdio(task_id: str, out: Path, model: ModelClient) -> tuple[list[Any], Any]:
    """Play over stdio; the tools the server listed and the agent's transcript."""
    params = StdioServerParameters(command=sys.executable, args=_serve_args(task_id, out))
    async with Client(params, read_timeout_seconds=120) as client:
        listed = (await client.list_tools()).tools
        return listed, await play(client, model)


def test_golden_over_stdio_gives_the_in_process_record(bank: Bank, tmp_path: Path) -> None:
    task = bank.task(CHAIN)
    listed, transcript = asyncio.run(_play_stdio(CHAIN, tmp_path, oracle_model(task)))
    # The seven tools exactly as in process (same order and schemas), then finish.
    assert _listed_as_openai(listed[:7]) == tool_schemas()
    assert [t.name for t in listed[7:]] == ["finish"]
    record = _record(tmp_path, CHAIN)
    assert record["verdict"] == "C" and record["model_api"] == "external/mcp"
    assert comparable(record) == comparable(in_process(bank, task, oracle_model(task)))
    # Every result the agent got over MCP is the tool message the trial recorded.
    assert transcript == record["messages"][: len(transcript)]
    assert record["messages"][len(transcript) - 1]["role"] == "assistant"


def test_blank_agent_over_stdio_fails_like_the_blank_model(bank: Bank, tmp_path: Path) -> None:
    task = bank.task(SOLO)
    asyncio.run(_play_stdio(SOLO, tmp_path, blank_model()))  # finishes with an empty answer at once
    record = _record(tmp_path, SOLO)
    assert record["passed"] is False and record["apiflow"]["termination"] == "no_answer"
    assert comparable(record) == comparable(in_process(bank, task, blank_model()))


async def _play_http(task_id: str, out: Path, model: ModelClient) -> int:
    process = await asyncio.create_subprocess_exec(
        sys.executable, *_serve_args(task_id, out, "--transport", "http"), stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        line = await asyncio.wait_for(process.stderr.readline(), 120)
        url = re.search(r"http://127\.0\.0\.1:\d+/[\w-]+/mcp", line.decode())
        assert url is not None, line
        async with Client(url.group(0), read_timeout_seconds=120) as client:
            await play(client, model)
        return await asyncio.wait_for(process.wait(), 120)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def _bad_call_then_golden(task: Task) -> ScriptedModel:
    """The golden solution after one call with malformed arguments (a ``parsing`` error)."""
    bad = Turn((PlannedCall(GoldenCall(name="read", arguments={"bogus": 1})),))
    return ScriptedModel("apiflow/oracle", [bad, *golden_turns(task)])


def test_golden_over_streamable_http_gives_the_in_process_record(bank: Bank, tmp_path: Path) -> None:
    task = bank.task(SOLO)
    assert asyncio.run(_play_http(SOLO, tmp_path, _bad_call_then_golden(task))) == 0
    record = _record(tmp_path, SOLO)
    assert record["verdict"] == "C"
    assert record["messages"][3]["error"]["type"] == "parsing"
    assert comparable(record) == comparable(in_process(bank, task, _bad_call_then_golden(task)))


def test_mcp_flags_need_mcp(tmp_path: Path) -> None:
    from apiflow.cli import main

    assert main(["world", "serve", "--task", SOLO, "--transport", "http"]) == 2
    assert main(["world", "serve", "--mcp", "--task", SOLO, "--max-seconds", "0"]) == 2
    assert main(["world", "serve", "--mcp", "--task", "no-such-task", "--out", str(tmp_path)]) == 2


def test_importing_apiflow_loads_no_mcp_sdk() -> None:
    code = (
        "import sys, apiflow, apiflow.cli, apiflow.mcp, apiflow.mcp.external; apiflow.cli.build_parser(); "
        "print(sorted(m for m in ('mcp', 'mcp_types', 'uvicorn', 'starlette') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_a_served_http_trial_admits_one_session_behind_its_secret_url(tmp_path: Path) -> None:
    """Another local client can neither guess the trial's URL nor join the session the agent opened."""
    import httpx

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    async def probe() -> tuple[int, int, int]:
        process = await asyncio.create_subprocess_exec(
            sys.executable, *_serve_args(SOLO, tmp_path, "--transport", "http"), stderr=asyncio.subprocess.PIPE
        )
        try:
            assert process.stderr is not None
            line = (await asyncio.wait_for(process.stderr.readline(), 120)).decode()
            found = re.search(r"(http://127\.0\.0\.1:\d+)/[\w-]+/mcp", line)
            assert found is not None, line
            url, base = found.group(0), found.group(1)
            async with httpx.AsyncClient(timeout=30) as http:
                guessed = (await http.post(f"{base}/mcp", json=initialize, headers=headers)).status_code
                first = await http.post(url, json=initialize, headers=headers)
                second = (await http.post(url, json=initialize, headers=headers)).status_code
            assert first.headers.get("mcp-session-id")
            return guessed, first.status_code, second
        finally:
            process.kill()
            await process.wait()

    guessed, first, second = asyncio.run(probe())
    assert (guessed, first, second) == (404, 200, 403)
