"""Keys are checked before the first trial; an account out of quota parks its provider."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from apiflow.cli import main

ROOT = Path(__file__).resolve().parents[2]


class _Refusing(BaseHTTPRequestHandler):
    """An OpenAI-shaped endpoint that answers every request with one fixed error."""

    status = 401
    body = {"error": {"message": "Incorrect API key provided: sk-bad-4b1d9e7f20c3a8d6.", "type": "invalid_request_error",
                      "code": "invalid_api_key"}}  # fmt: skip
    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append(self.path)
        data = json.dumps(self.body).encode()
        self.send_response(self.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing() -> Iterator[str]:
    _Refusing.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _grid(tmp_path: Path, model: dict, **extra) -> Path:
    grid = {"name": "keys", "bank": str(ROOT / "bank" / "sample"), "models": [model], "out": str(tmp_path / "out"),
            "tasks": {"ids": ["sample-w01-sub01"]}, **extra}  # fmt: skip
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    return tmp_path / "grid.yaml"


def test_a_missing_key_is_refused_before_anything_starts(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    grid = _grid(tmp_path, {"model": "openai/gpt-5-mini"})
    assert main(["grid", "run", str(grid), "--dry-run"]) == 0
    assert "key: openai/gpt-5-mini: no API key: set OPENAI_API_KEY" in capsys.readouterr().err
    assert main(["grid", "run", str(grid)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("apiflow: error: openai/gpt-5-mini: no API key: set OPENAI_API_KEY")
    assert not (tmp_path / "out").exists()


def test_a_rejected_key_is_found_by_one_call_before_the_first_trial(tmp_path, refusing, capsys) -> None:
    params = {"api_base": refusing, "api_key": "sk-bad-4b1d9e7f20c3a8d6"}
    grid = _grid(tmp_path, {"model": "openai/gpt-5-mini", "params": params}, preflight="call")
    assert main(["grid", "run", str(grid)]) == 2
    err = capsys.readouterr().err
    assert "the provider refused the key" in err and "sk-bad-4b1d9e7f20c3a8d6" not in err  # redacted
    assert len(_Refusing.seen) == 1 and not (tmp_path / "out").exists()


def test_a_local_endpoint_is_not_probed_by_default(tmp_path, refusing, capsys) -> None:
    from cluster.preflight import missing_keys, rejected_keys
    from cluster.spec import load_grid

    spec = load_grid(_grid(tmp_path, {"model": "openai/gpt-5-mini", "params": {"api_base": refusing}}))
    assert missing_keys(spec) == [] and rejected_keys(spec) == [] and _Refusing.seen == []
