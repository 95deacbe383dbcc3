"""A world served over a real socket behaves like the in-process transport."""

from __future__ import annotations

import json
import urllib.request
from urllib.error import HTTPError

import pytest

from apiflow.bank import load_bank
from apiflow.serve import WorldServer
from apiflow.world import WorldSession

BANK = load_bank()


@pytest.fixture
def server():
    task = BANK.task("sample-w01-sub01")
    running = WorldServer(WorldSession(BANK.world_of(task), seed=0)).start()
    yield running
    running.stop()


def call(url: str, method: str = "GET", body: dict | None = None, headers: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read() or b"null")
    except HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read() or b"null")


def test_token_then_protected_route_over_http(server: WorldServer) -> None:
    creds = {"grant_type": "client_credentials", "client_id": "cid_loam_31", "client_secret": "csec_7d0e2b"}
    status, _, body = call(f"{server.url}/v3/auth/token", "POST", creds, {"content-type": "application/json"})
    assert status == 200 and body["access_token"] == "tk_loam_5521"
    status, headers, body = call(f"{server.url}/v3/blocks", headers={"Authorization": "Bearer tk_loam_5521"})
    assert status == 200 and body["next_cursor"] == "cur_b2"
    assert headers["server"] == "uvicorn" and int(headers["content-length"]) > 0


def test_server_semantics_over_http(server: WorldServer) -> None:
    assert call(f"{server.url}/nope")[0:3:2] == (404, {"detail": "Not Found"})
    status, headers, _ = call(f"{server.url}/v3/blocks", "DELETE")
    assert status == 405 and headers["allow"] == "GET"
    assert call(f"{server.url}/openapi.json")[2]["openapi"] == "3.1.0"
