"""``external/<label>``: a scripted external agent (``scripted_agent.py``) per trial, over MCP.

Real subprocesses talking to a real MCP server through the SDK's own client: over streamable
HTTP, over the agent's stdio, through an agent service endpoint; a crashing, a silent, a hanging
and a never-connecting agent each end as a clear record; ``apiflow run`` and a local Ray grid
run the kind with no keys.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcpkit import agent_command, comparable, in_process

from apiflow.agent import TrialLimits, trial_seed
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.errors import UsageError
from apiflow.mcp.serve import first_trial
from apiflow.models import make_model
from apiflow.models.offline import oracle_model
from apiflow.results.record import TrialRecord

ROOT = Path(__file__).resolve().parents[2]
TASK = "sample-w01-sub01"
NAME = "external/scripted"
SLUG = "scripted"


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


async def _trial(bank: Bank, params: dict[str, Any], limits: TrialLimits | None = None) -> TrialRecord:
    task = bank.task(TASK)
    model = make_model(NAME, task, trial_seed(0, task.id, 1), params)
    return await first_trial(bank, task, model, slug=SLUG, limits=limits)


class _AgentService(BaseHTTPRequestHandler):
    """An agent service: each POST names a trial's MCP URL; a golden agent is started for it."""

    started: list[subprocess.Popen[bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert set(body) == {"mcp_url"}  # no task id: the agent learns its task in the session
        env = {**os.environ, "APIFLOW_MCP_URL": body["mcp_url"]}
        self.started.append(subprocess.Popen(agent_command("golden"), env=env))
        self.send_response(202)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_external_agents_end_as_clear_records(bank: Bank) -> None:
    service = ThreadingHTTPServer(("127.0.0.1", 0), _AgentService)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{service.server_address[1]}/run"
    cases = {
        "http": {"command": agent_command("golden")},
        "stdio": {"command": agent_command("golden", "--stdio"), "transport": "stdio"},
        "endpoint": {"endpoint": endpoint},
        "blank": {"command": agent_command("blank")},
        "crash": {"command": agent_command("crash")},
        "noconnect": {"command": agent_command("noconnect")},
        "nocommand": {"command": ["/nonexistent/agent"]},
        "hang": {"command": agent_command("hang"), "grace_s": 1},
    }

    async def run_all() -> dict[str, TrialRecord]:
        hang_limits = TrialLimits(max_seconds=25)  # time for a loaded machine to start the agent
        records = await asyncio.gather(
            *(_trial(bank, p, hang_limits if k == "hang" else None) for k, p in cases.items())
        )
        return dict(zip(cases, records, strict=True))

    try:
        records = asyncio.run(run_all())
    finally:
        service.shutdown()
        for process in _AgentService.started:
            process.wait(timeout=60)
    task = bank.task(TASK)
    oracle = comparable(in_process(bank, task, oracle_model(task), slug=SLUG))
    for case in ("http", "stdio", "endpoint"):
        assert records[case].verdict == "C", case
        assert records[case].model_api == NAME
        assert comparable(records[case]) == oracle, case
    # Connected, then silent or dead: the agent stopped talking (its failure, graded).
    for case in ("blank", "crash"):
        assert records[case].apiflow.termination == "no_answer" and records[case].passed is False, case
    assert records["crash"].apiflow.tool_calls == 1
    # Left before it played: the agent's own doing (it knew its task only once connected), graded.
    assert records["noconnect"].apiflow.termination == "no_answer" and records["noconnect"].verdict == "I"
    assert "before it connected" in (records["noconnect"].apiflow.agent_error or "")
    # A command the harness could not start: the grid's setup, not the agent (unscored, retried on resume).
    assert records["nocommand"].apiflow.termination == "provider_error" and records["nocommand"].verdict == ""
    assert "cannot start" in (records["nocommand"].apiflow.harness_error or "")
    assert records["hang"].apiflow.termination == "limit" and records["hang"].apiflow.limit == "time"


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"command": []},
        {"command": ["a"], "endpoint": "http://x"},
        {"endpoint": "ftp://x"},
        {"command": ["a"], "transport": "pipe"},
        {"command": ["a"], "grace_s": 0},
        {"command": ["a"], "bogus": 1},
    ],
)
def test_bad_params_are_usage_errors(bank: Bank, params: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        make_model(NAME, bank.task(TASK), 0, params)


@pytest.mark.slow
def test_apiflow_run_drives_an_external_agent(tmp_path: Path) -> None:
    command = json.dumps(agent_command("golden"))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "apiflow.cli",
            "run",
            "--model",
            NAME,
            "--task",
            TASK,
            "--out",
            str(tmp_path),
            "--param",
            f"command={command}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    record = json.loads((tmp_path / SLUG / f"{TASK}-t1.json").read_text())
    assert record["verdict"] == "C" and record["model_api"] == NAME


@pytest.mark.slow
def test_a_local_ray_grid_runs_external_agents_with_no_keys(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    zero = {k: 0.0 for k in ("input", "output", "cache_read", "cache_write", "reasoning")}
    prices.write_text(
        json.dumps(
            {
                "version": "test",
                "currency": "USD",
                "unit": "per_1m_tokens",
                "models": {"external/*": {**zero, "source": "external agent"}},
            }
        )
    )
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        json.dumps(
            {
                "name": "external",
                "bank": str(ROOT / "bank/sample"),
                "out": str(tmp_path / "out"),
                "price_table": str(prices),
                "epochs": 1,
                "models": [{"model": NAME, "params": {"command": agent_command("golden")}}],
                "tasks": {"ids": [TASK, "sample-w01-sub02"]},
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    out = subprocess.run(
        [sys.executable, "-m", "apiflow.cli", "grid", "run", str(grid)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**env, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob(f"*{SLUG}*/*.json")]
    records = [r for r in records if "verdict" in r]
    assert sorted(r["task_id"] for r in records) == sorted([TASK, "sample-w01-sub02"]), out.stderr[-2000:]
    assert all(r["verdict"] == "C" for r in records)


def test_the_readmes_example_agent_plays_a_trial(tmp_path) -> None:
    """``examples/mcp-agent/my_agent.py``, as the README runs it: connects, reads, finishes (honestly failing)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    command = json.dumps([sys.executable, "examples/mcp-agent/my_agent.py"])
    done = subprocess.run(
        [sys.executable, "-m", "apiflow.cli", "run", "--model", "external/mine", "--task", TASK,
         "--out", str(tmp_path), "--param", f"command={command}"],
        cwd=root, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(next(tmp_path.glob("mine/*.json")).read_text())
    assert record["verdict"] == "I" and record["apiflow"]["termination"] == "answered"
    assert record["apiflow"]["tool_calls"] == 1
