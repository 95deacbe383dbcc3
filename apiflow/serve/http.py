"""A world behind a real HTTP socket, for an external agent or a human with curl.

The in-process ``execute`` tool and this server wrap the same ``WorldSession``, so a
world behaves identically whichever way it is reached. Standard library only: this is a
debugging and integration aid, not a production server.

It listens on loopback only, and a web page the user has open can still reach loopback: through
DNS rebinding (a name of the page's own that then resolves to 127.0.0.1) its scripts read the
answers. Such a request carries the page's name as ``Host``, so a request whose ``Host`` is not a
loopback name is refused (``LOOPBACK_HOSTS``). A client also gets ``read_timeout`` seconds to send
a whole request, headers and body: one trickling bytes would otherwise hold its thread forever.
"""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import urlsplit

from apiflow.world import HttpRequest, TransportError, WorldSession

MAX_BODY_BYTES: Final = 262_144
"""Largest request body the server reads: the ``argument_chars`` bound of the in-process tools."""
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "[::1]"})
"""The ``Host`` names a request may carry, bare or with the server's own port."""
READ_TIMEOUT_S: Final = 5.0
"""Default seconds a client has to send one whole request (a request from curl or an agent takes
milliseconds); also how long an idle kept-alive connection stays open, and how long writing an
answer may take."""


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes, each read bounded by what is left of the current request's deadline."""

    def __init__(self, sock: socket.socket, deadline: Callable[[], float], idle: float) -> None:
        self._sock = sock
        self._deadline = deadline
        self._idle = idle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline() - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not received within the read deadline")
        self._sock.settimeout(left)
        try:
            return self._sock.recv_into(buffer)
        finally:
            self._sock.settimeout(self._idle)  # writes get the whole timeout, not what reading left


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    _deadline = 0.0

    def setup(self) -> None:
        super().setup()
        idle = self.server.read_timeout
        self.connection.settimeout(idle)
        self.rfile.close()  # the socket's own reader, replaced by one that keeps the deadline
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, lambda: self._deadline, idle))

    def handle_one_request(self) -> None:
        # The stdlib reads the request line, the headers and (in ``_handle``) the body inside this
        # call, and on TimeoutError closes the connection without an answer.
        self._deadline = time.monotonic() + self.server.read_timeout
        super().handle_one_request()

    def _handle(self) -> None:
        # The client is untrusted (an external agent): its body is bounded like a tool call's
        # arguments (docs/design/031), and a malformed request is a 400, never a dead handler.
        hosts = self.headers.get_all("host") or []
        if len(hosts) != 1 or not _is_loopback(hosts[0], self.server.server_address[1]):
            self.close_connection = True  # the body is left unread
            self._write(403, {"content-type": "application/json"}, json.dumps({
                "error": "forbidden_host", "detail": "Host must be localhost, 127.0.0.1 or [::1]",
            }))  # fmt: skip
            return
        declared = (self.headers.get("content-length") or "0").strip()
        if not declared.isdigit():
            self.close_connection = True
            self._bad_request(f"invalid content-length {declared[:40]!r}")
            return
        length = int(declared)
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the body is left unread
            self._write(413, {"content-type": "application/json"}, json.dumps({
                "error": "payload_too_large", "detail": f"body over {MAX_BODY_BYTES:,} bytes",
            }))  # fmt: skip
            return
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else None
        try:
            urlsplit(self.path)
        except ValueError as exc:  # e.g. "Invalid IPv6 URL": no request the world can parse
            self._bad_request(str(exc))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = HttpRequest(self.command, self.path, headers, raw)
        try:
            with self.server.lock:
                response = self.server.session.send(request)
        except TransportError as exc:
            self._bad_request(str(exc))
            return
        self._write(response.status, response.headers, response.text or "")

    def _bad_request(self, detail: str) -> None:
        self._write(
            400, {"content-type": "application/json"}, json.dumps({"error": "bad_request", "detail": detail})
        )

    def _write(self, status: int, headers: dict[str, str], text: str) -> None:
        data = text.encode()
        self.send_response_only(status)
        for name, value in headers.items():
            if name != "content-length":
                self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.verbose:
            super().log_message(format, *args)


def _is_loopback(host: str, port: Any) -> bool:
    host = host.strip().lower()
    return host in LOOPBACK_HOSTS or any(host == f"{name}:{port}" for name in LOOPBACK_HOSTS)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], session: WorldSession, verbose: bool, read_timeout: float
    ) -> None:
        super().__init__(address, _Handler)
        self.session = session
        self.lock = threading.Lock()  # one session, one state: requests are answered one at a time
        self.verbose = verbose
        self.read_timeout = read_timeout


class WorldServer:
    """Serve one world session on ``127.0.0.1:<port>`` (port 0 picks a free one).

    Args:
        session: The world session every request is sent to.
        port: The port to listen on (0 picks a free one).
        verbose: Log each request to stderr.
        read_timeout: Seconds a client has to send one whole request, headers and body; a slower
            one is cut off without an answer.
    """

    def __init__(
        self,
        session: WorldSession,
        port: int = 0,
        verbose: bool = False,
        read_timeout: float = READ_TIMEOUT_S,
    ) -> None:
        if not read_timeout > 0:
            raise ValueError(f"read_timeout must be positive, got {read_timeout}")
        self._server = _Server(("127.0.0.1", port), session, verbose, read_timeout)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> WorldServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self._server.serve_forever, name="world-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted."""
        self._server.serve_forever()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
