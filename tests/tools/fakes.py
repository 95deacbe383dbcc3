"""A tiny fake world for the tool tests: a few routes, JSON and text bodies, transport faults."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from apiflow.world.errors import TransportError
from apiflow.world.http import HttpRequest, HttpResponse

SPEC_CONTENT: dict[str, Any] = {
    "format": "openapi-3.1",
    "title": "Quillfeather Seeds — a seed-catalogue API",
    "served_at": "/openapi.json",
    "description": "OpenAPI 3.1 spec for the Quillfeather Seeds API, inlined below.",
    "document": {
        "openapi": "3.1.0",
        "info": {"title": "Quillfeather Seeds", "version": "1.0.0"},
        "servers": [{"url": "http://localhost:9001"}],
        "paths": {
            "/v2/oauth/token": {
                "post": {"summary": "Mint a client_credentials token", "security": [{"none": []}]}
            },
            "/v2/packets": {"get": {"summary": "List seed packets", "security": [{"bearer": []}]}},
        },
    },
}


@dataclass
class Seed:
    """Stands in for ``apiflow.bank.task.SeedVariable``."""

    scope: str
    name: str
    value: Any


@dataclass
class FakeWorld:
    """Answers like the mock server: token mint, a long list, 404s, and scripted transport faults."""

    sent: list[HttpRequest] = field(default_factory=list)
    fault: TransportError | None = None

    def send(self, request: HttpRequest) -> HttpResponse:
        self.sent.append(request)
        if self.fault is not None:
            raise self.fault
        path = urlsplit(request.url).path
        if request.method == "POST" and path == "/v2/oauth/token":
            if "grant_type=client_credentials" in str(request.body) or (
                isinstance(request.body, dict) and request.body.get("grant_type") == "client_credentials"
            ):
                return _json(200, {"access_token": "tk_quill_5521", "token_type": "Bearer"})
            return _json(
                400, {"error": "unsupported_grant_type", "hint": "use grant_type=client_credentials"}
            )
        if request.method == "GET" and path == "/v2/packets":
            packets = [{"packet_id": f"pk-{i:03d}", "variety": "Brandywine — heirloom"} for i in range(40)]
            return _json(200, {"packets": packets})
        if path == "/v2/notes":
            return HttpResponse(200, {"content-type": "text/plain"}, "plain text note")
        return _json(404, {"detail": "Not Found"})


def _json(status: int, body: Any) -> HttpResponse:
    text = json.dumps(body, separators=(",", ":"))
    headers = {
        "date": "Fri, 04 Dec 2026 10:00:00 GMT",
        "server": "uvicorn",
        "content-type": "application/json",
    }
    headers["content-length"] = str(len(text.encode()))
    return HttpResponse(status, headers, body)
