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
    skip_host = any(name.lower() == "host" for name in headers or {})  # the test's own Host, alone
    conn.putrequest(method, path, skip_host=skip_host, skip_accept_encoding=True)
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
        status, body = _raw(
            server, "POST", "/v3/auth/token", headers={"Content-Length": str(MAX_BODY_BYTES + 1)}
        )
        assert status == 413 and body["error"] == "payload_too_large"
        status, body = _raw(server, "POST", "/v3/auth/token", headers={"Content-Length": "-5"})
        assert status == 400 and "content-length" in body["detail"]
        status, body = _socket(server, b"GET http://[::1/v3/blocks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert status == 400 and body["detail"] == "Invalid IPv6 URL"
        nested = b"[" * 5000
        status, _ = _raw(server, "POST", "/v3/auth/token", nested, {"Content-Length": str(len(nested))})
        assert status == 400  # the world's own answer to a body that is no form: served, not crashed
        status, _ = _raw(server, "GET", "/v3/blocks")
        assert status == 401
    finally:
        server.stop()


def _status(server: WorldServer, request: bytes) -> int:
    """The status line's code of the answer to raw ``request`` bytes."""
    import socket

    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n" not in data and (chunk := sock.recv(65536)):
            data += chunk
    return int(data.split()[1])


def test_a_request_whose_host_is_not_a_loopback_name_is_refused() -> None:
    """DNS rebinding: a web page's script reaches 127.0.0.1 under the page's own name, which it
    carries as Host; only loopback names (bare or with the server's port) are answered."""
    task = BANK.task("sample-w01-sub01")
    server = WorldServer(WorldSession(BANK.world_of(task), seed=0)).start()
    port = server.url.rsplit(":", 1)[1]
    try:
        for host in (
            "evil.example",
            f"evil.example:{port}",
            "127.0.0.1.evil.example",
            f"localhost:{int(port) + 1}",
        ):
            status, body = _raw(server, "GET", "/v3/blocks", headers={"Host": host})
            assert status == 403 and body["error"] == "forbidden_host", host
        status, body = _raw(
            server, "POST", "/v3/auth/token", b"{}", {"Host": "evil.example", "Content-Length": "2"}
        )
        assert status == 403  # refused before the world sees it
        assert _status(server, b"GET /v3/blocks HTTP/1.0\r\n\r\n") == 403  # no Host at all
        assert (
            _status(server, b"GET /v3/blocks HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n")
            == 403
        )
        for host in ("localhost", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST"):
            status, _ = _raw(server, "GET", "/v3/blocks", headers={"Host": host})
            assert status == 401, host  # the world's own answer: no token
    finally:
        server.stop()


def _cut_after(server: WorldServer, head: bytes, trickle: bytes, give_up: float) -> float | None:
    """Send ``head``, then ``trickle`` a byte every 0.1 s: seconds until the server closes the
    connection, None if it has not after ``give_up`` seconds. The server must send no answer."""
    import select
    import socket
    import time

    host, port = server.url.removeprefix("http://").split(":")
    start = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(head)
        for index in range(int(give_up / 0.1)):
            try:
                if select.select([sock], [], [], 0.1)[0]:
                    assert sock.recv(65536) == b""  # closed, with no answer
                    return time.monotonic() - start
                if index < len(trickle):
                    sock.sendall(trickle[index : index + 1])
            except (BrokenPipeError, ConnectionResetError):
                return time.monotonic() - start
    return None


def test_a_client_trickling_its_request_is_cut_off_at_the_read_deadline() -> None:
    """A client gets ``read_timeout`` seconds for a whole request (headers and body), however it
    sends it: one byte at a time, or nothing at all."""
    task = BANK.task("sample-w01-sub01")
    server = WorldServer(WorldSession(BANK.world_of(task), seed=0), read_timeout=0.5).start()
    try:
        slow_headers = b"GET /v3/blocks HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: " + b"a" * 200
        slow_body = (
            b"POST /v3/auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200\r\n\r\n",
            b"a" * 200,
        )
        for head, trickle in (slow_headers, slow_body, (b"", b"")):
            cut = _cut_after(server, head, trickle, give_up=6)
            assert cut is not None and 0.45 <= cut < 2.5, (head, cut)
        status, _ = _raw(server, "GET", "/v3/blocks")
        assert status == 401  # the server still answers the next client
    finally:
        server.stop()
