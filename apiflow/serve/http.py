"""A world behind a real HTTP socket, for an external agent or a human with curl.

The in-process ``execute`` tool and this server wrap the same ``WorldSession``, so a
world behaves identically whichever way it is reached. Standard library only: this is a
debugging and integration aid, not a production server.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import urlsplit

from apiflow.world import HttpRequest, TransportError, WorldSession

MAX_BODY_BYTES: Final = 262_144
"""Largest request body the server reads: the ``argument_chars`` bound of the in-process tools."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def _handle(self) -> None:
        # The client is untrusted (an external agent): its body is bounded like a tool call's
        # arguments (docs/design/031), and a malformed request is a 400, never a dead handler.
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], session: WorldSession, verbose: bool) -> None:
        super().__init__(address, _Handler)
        self.session = session
        self.lock = threading.Lock()  # one session, one state: requests are answered one at a time
        self.verbose = verbose


class WorldServer:
    """Serve one world session on ``127.0.0.1:<port>`` (port 0 picks a free one)."""

    def __init__(self, session: WorldSession, port: int = 0, verbose: bool = False) -> None:
        self._server = _Server(("127.0.0.1", port), session, verbose)
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
