"""What an external agent gets from the harness: a minimal environment, no task id, no keys.

The harness runs with provider keys in its environment; an ``external/<label>`` agent is a
program apiflow does not control, so it starts with ``PATH``/``HOME``/``LANG``/``LC_*``/``TMPDIR``,
the MCP URL, and only what its grid entry names (``env``, ``pass_env``). Error text an agent
chooses (here: an agent service's refusal) is redacted before it reaches the record.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcpkit import agent_command

from apiflow.agent import trial_seed
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.errors import UsageError
from apiflow.mcp.external import BASE_ENV, URL_ENV, agent_config, agent_environment
from apiflow.mcp.serve import first_trial
from apiflow.models import make_model
from apiflow.results.record import TrialRecord

TASK = "sample-w01-sub01"
NAME = "external/envcheck"
OPENAI_KEY = "sk-test-OPENAIharnessKEY0123456789"
ANTHROPIC_KEY = "sk-ant-test-NAMEDforTHISagent-4455"
AWS_SECRET = "awsSECRETharness-0123456789abcdef"
PLAIN_TOKEN = "PLAINharnessTOKEN-97531-zyxw"  # not credential-shaped: only its name says so


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


@pytest.fixture
def harness_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAHARNESS0123456789")
    monkeypatch.setenv("MY_SERVICE_TOKEN", PLAIN_TOKEN)
    monkeypatch.setenv("AGENT_SETTING", "passed-through-value")
    monkeypatch.setenv("UNNAMED_SETTING", "stays-home")
    monkeypatch.setenv("APIFLOW_TASK_ID", TASK)  # even if the harness's own shell has one
    monkeypatch.setenv("LC_ALL", "C.UTF-8")


def _trial(bank: Bank, params: dict[str, Any]) -> TrialRecord:
    task = bank.task(TASK)
    model = make_model(NAME, task, trial_seed(0, task.id, 1), params)
    return asyncio.run(first_trial(bank, task, model, slug="envcheck"))


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_an_agent_sees_no_harness_key_and_only_what_its_entry_names(
    bank: Bank, harness_keys: None, tmp_path: Path, transport: str
) -> None:
    dump = tmp_path / "env.json"
    extra = ("--stdio",) if transport == "stdio" else ()
    params = {
        "command": agent_command("env", "--env-out", str(dump), *extra),
        "transport": transport,
        "pass_env": ["AGENT_SETTING", "ANTHROPIC_API_KEY", "NOT_SET_ANYWHERE"],
        "env": {"AGENT_LITERAL": "literal-value"},
    }
    record = _trial(bank, params)
    assert record.verdict == "C", record.apiflow.harness_error  # it found its task through the session
    seen: dict[str, str] = json.loads(dump.read_text(encoding="utf-8"))
    # Named by the entry: arrive (a key too, when named).
    assert seen["AGENT_SETTING"] == "passed-through-value"
    assert seen["ANTHROPIC_API_KEY"] == ANTHROPIC_KEY
    assert seen["AGENT_LITERAL"] == "literal-value"
    assert "NOT_SET_ANYWHERE" not in seen
    # Not named: never.
    for name in (
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "MY_SERVICE_TOKEN",
        "UNNAMED_SETTING",
    ):
        assert name not in seen, name
    for secret in (OPENAI_KEY, AWS_SECRET, PLAIN_TOKEN):
        assert not any(secret in v for v in seen.values())
    # No task id before it connects: the session is the only way to learn the task.
    assert "APIFLOW_TASK_ID" not in seen and not any(TASK in v for v in seen.values())
    assert (URL_ENV in seen) == (transport == "http")
    allowed = BASE_ENV | {URL_ENV, "AGENT_SETTING", "ANTHROPIC_API_KEY", "AGENT_LITERAL"}
    assert {k for k in seen if k not in allowed and not k.startswith("LC_")} == set()
    assert seen.get("LC_ALL") == "C.UTF-8"


def test_the_environment_rule() -> None:
    config = agent_config(
        NAME, {"command": ["a"], "pass_env": ["PASSED_TOKEN"], "env": {"PATH": "/agent/bin"}}
    )
    harness = {
        "PATH": "/usr/bin", "HOME": "/home/op", "LANG": "C.UTF-8", "LC_CTYPE": "C.UTF-8", "TMPDIR": "/tmp",
        "LC_AUTH_TOKEN": "a-credential-value", "OPENAI_API_KEY": OPENAI_KEY,
        "PASSED_TOKEN": "named-token-1234",
        "PYTHONPATH": "/src", "VIRTUAL_ENV": "/venv", "APIFLOW_TASK_ID": TASK,
    }  # fmt: skip
    assert agent_environment(config, harness) == {
        "PATH": "/agent/bin",
        "HOME": "/home/op",
        "LANG": "C.UTF-8",
        "LC_CTYPE": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PASSED_TOKEN": "named-token-1234",
    }  # fmt: skip (env wins over the base; a credential-named LC_* is not base)


@pytest.mark.parametrize("pass_env", ["OPENAI_API_KEY", [1], [""], ["A=B"], {"A": "B"}])
def test_bad_pass_env_is_a_usage_error(bank: Bank, pass_env: Any) -> None:
    with pytest.raises(UsageError, match="pass_env"):
        make_model(NAME, bank.task(TASK), 0, {"command": ["a"], "pass_env": pass_env})


class _RefusingService(BaseHTTPRequestHandler):
    """An agent service that refuses the trial with a status line quoting the harness's keys."""

    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(500, f"bad key {OPENAI_KEY} or {PLAIN_TOKEN} or param agent-param-secret-8642")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_an_agents_error_text_is_redacted_in_the_record(bank: Bank, harness_keys: None) -> None:
    service = ThreadingHTTPServer(("127.0.0.1", 0), _RefusingService)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    try:
        params = {
            "endpoint": f"http://127.0.0.1:{service.server_address[1]}/run",
            "env": {"AGENT_API_KEY": "agent-param-secret-8642"},
        }
        record = _trial(bank, params)
    finally:
        service.shutdown()
    assert _RefusingService.bodies and all(set(b) == {"mcp_url"} for b in _RefusingService.bodies)
    assert record.apiflow.termination == "provider_error"
    text = record.to_json()
    assert "refused the trial" in (record.apiflow.harness_error or "") and "[REDACTED]" in text
    for secret in (OPENAI_KEY, PLAIN_TOKEN, "agent-param-secret-8642"):
        assert secret not in text, secret
