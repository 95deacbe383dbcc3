"""The world server's client is untrusted: bad requests are answered, never a dead handler."""

from __future__ import annotations

import http.client
import json

from apiflow.bank import load_bank
from apiflow.serve import WorldServer
from apiflow.serve.http import MAX_BODY_BYTES
from apiflow.world import WorldSession

BANK = load_bank()


def _raw(server: WorldServer, method: str, path: str, body: bytes = b"", headers: dict | None = None):
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.putrequest(method, path, skip_accept_encoding=True)
    for name, value in (headers or {}).items():
        conn.putheader(name, value)
    conn.endheaders()
    if body:
        conn.send(body)
    response = conn.getresponse()
    status, data = response.status, response.read()
    conn.close()
    return status, json.loads(data or b"null")


def _socket(server: WorldServer, request: bytes):
    """Bytes on the wire, for requests ``http.client`` itself refuses to send."""
    import socket

    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def test_bad_requests_get_4xx_and_the_server_keeps_serving() -> None:
    task = BANK.task("sample-w01-sub01")
    server = WorldServer(WorldSession(BANK.world_of(task), seed=0)).start()
    try:
        status, body = _raw(server, "POST", "/v3/auth/token", headers={"Content-Length": str(MAX_BODY_BYTES + 1)})
        assert status == 413 and body["error"] == "payload_too_large"
        status, body = _raw(server, "POST", "/v3/auth/token", headers={"Content-Length": "-5"})
        assert status == 400 and "content-length" in body["detail"]
        status, body = _socket(server, b"GET http://[::1/v3/blocks HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == 400 and body["detail"] == "Invalid IPv6 URL"
        nested = b"[" * 5000
        status, _ = _raw(server, "POST", "/v3/auth/token", nested, {"Content-Length": str(len(nested))})
        assert status == 400  # the world's own answer to a body that is no form: served, not crashed
        status, _ = _raw(server, "GET", "/v3/blocks")
        assert status == 401
    finally:
        server.stop()
