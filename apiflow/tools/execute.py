"""``execute``: turn request content into an ``HttpRequest``, send it, record the exchange.

This module plays the HTTP client the published harness used (httpx over a local
uvicorn mock): it refuses what that client refused (``execute failed: ...`` tool errors),
reports what failed on the wire as a *successful* network-error result, and otherwise
hands the request to the world unchanged — the URL exactly as the agent wrote it
(relative, or absolute on the spec server), a dict body as JSON, a string body raw.

GraphQL and MCP request shapes are accepted (the system prompt advertises them) and sent
as the HTTP requests such clients would make: GraphQL as ``POST <url or /graphql>`` with
``{query, variables?, operationName?}``, MCP as a JSON-RPC ``tools/call`` to
``POST <url or /mcp>``. Every world is REST-only, so they meet the world's 404.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from apiflow.tools.refs import EntityRef, make_ref
from apiflow.tools.result import ToolError
from apiflow.tools.workspace import Exchange, Workspace
from apiflow.world.errors import TransportError
from apiflow.world.http import HttpRequest, HttpResponse, body_text
from apiflow.world.jsontext import dumps

Send = Callable[[HttpRequest], HttpResponse]

PREVIEW_LIMIT = 600
PREVIEW_MARK = "…"
GRAPHQL_PATH = "/graphql"
MCP_PATH = "/mcp"
# What h11 refuses: in a name, whitespace, ":" and control characters; in a value, CR, LF and NUL.
_BAD_HEADER_NAME = re.compile(r"[ \t:\r\n\x00]")
_BAD_HEADER_VALUE = re.compile(r"[\r\n\x00]|\A[ \t]|[ \t]\Z")  # or space/tab at either end


class Outgoing(NamedTuple):
    """A request ready for the world, and its record as the agent sent it."""

    http: HttpRequest
    sent: dict[str, Any]
    view: str
    """The URL as the server sees it (``server_view``)."""


def body_preview(response: HttpResponse) -> str:
    """The first 600 characters of the body text, plus "…" when cut (601 at most)."""
    text = response.text if response.text is not None else body_text(response.body)
    return text[:PREVIEW_LIMIT] + PREVIEW_MARK if len(text) > PREVIEW_LIMIT else text


def server_view(url: str) -> str:
    """The URL as the server saw it: path and query, no scheme or host (``/v3/plans?x=1``)."""
    parts = urlsplit(url)
    path = parts.path if parts.path.startswith("/") else "/" + parts.path
    return f"{path}?{parts.query}" if parts.query else path


def _protocol_fields(content: dict[str, Any]) -> tuple[str, str, str, Any]:
    """``(protocol, method, url, body)`` of request content, mapping GraphQL/MCP onto HTTP."""
    protocol = content.get("protocol") or "rest"
    if protocol == "rest":  # the usual request (only the string "rest" equals it): no case to fold
        return protocol, content.get("method") or "GET", content.get("url") or "", content.get("body")
    if not isinstance(protocol, str) or protocol.lower() not in ("rest", "graphql", "mcp"):
        raise ToolError(f"execute failed: unsupported protocol {protocol!r} (use 'rest', 'graphql' or 'mcp')")
    protocol = protocol.lower()
    if protocol == "graphql":
        query: dict[str, Any] = {
            k: content[k] for k in ("query", "variables", "operationName") if k in content
        }
        return protocol, "POST", content.get("url") or GRAPHQL_PATH, query
    if protocol == "mcp":
        params = {"name": content.get("tool"), "arguments": content.get("arguments") or {}}
        call: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        return protocol, "POST", content.get("url") or MCP_PATH, call
    return protocol, content.get("method") or "GET", content.get("url") or "", content.get("body")


def _check_headers(headers: Any) -> dict[str, Any]:
    if headers is None:
        return {}
    if not isinstance(headers, dict):
        raise ToolError(
            f"execute failed: headers must be an object of name: value strings, not {type(headers)}"
        )
    for value in headers.values():
        if not isinstance(value, str):
            raise ToolError(f"execute failed: Header value must be str or bytes, not {type(value)}")
    return headers


def _declared_length_too_small(headers: dict[str, str], lowered: dict[str, str], body: Any) -> bool:
    if not headers:
        return False
    if len(lowered) == len(headers):  # no two names alike but for case: the lowered map is exact
        declared = lowered.get("content-length")
    else:  # the first name that lowers to it, as sent
        declared = next((v for k, v in headers.items() if k.lower() == "content-length"), None)
    if declared is None or not declared.strip().isdigit():
        return False
    sent = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return body is not None and len(sent.encode()) > int(declared)


def build_outgoing(content: dict[str, Any]) -> Outgoing:
    """Validate request content the way the HTTP client would and build the world's request.

    A headers object of strings is checked and lowered in one loop; the checks, their order and
    their errors are those of ``_check_headers``.

    Raises:
        ToolError: ``execute failed: ...`` for a request the client refuses to send.
    """
    protocol, method, url, body = _protocol_fields(content)
    if type(method) is not str and not isinstance(method, str):
        raise ToolError(f"execute failed: method must be a string, not {type(method)}")
    if type(url) is not str and not isinstance(url, str):
        raise ToolError(f"execute failed: url must be a string, not {type(url)}")
    try:
        view = _server_view(url) if len(url) <= _VIEW_MEMO_URL else server_view(url)
    except ValueError as exc:  # e.g. "Invalid IPv6 URL": the HTTP client refuses it before sending
        raise ToolError(f"execute failed: {exc}") from None
    headers = content.get("headers")
    lowered: dict[str, Any] = {}
    if headers is None:
        headers = {}
    elif type(headers) is not dict:
        headers = _check_headers(headers)
        lowered = {name.lower(): value for name, value in headers.items()}
    elif headers:
        for name in headers:  # ``_check_headers`` and the lowered map in one loop
            value = headers[name]
            if type(value) is not str:
                _check_headers(headers)  # raises for the first value that is not a string
            lowered[name.lower()] = value
    # Only a header that lowers to content-length can make the declared length too small.
    if "content-length" in lowered and _declared_length_too_small(headers, lowered, body):
        raise ToolError("execute failed: Too much data for declared Content-Length")
    upper = method.upper()
    http = HttpRequest(upper, url, lowered, body)
    sent = {"protocol": protocol, "method": upper, "url": url, "headers": dict(headers), "body": body}
    return Outgoing(http, sent, view)


_VIEW_MEMO_URL = 2048


@functools.lru_cache(maxsize=4096)
def _server_view(url: str) -> str:
    # A pure function of the text, kept for the URLs a grid sends again (short ones only): one split
    # both checks the URL as the client would and gives the response's ``url``.
    return server_view(url)


def wire_failure(headers: dict[str, str]) -> str | None:
    """What h11 reports for a header it will not put on the wire, else None.

    Such requests fail *after* the request exists, so the published harness answered with a
    network-error result, e.g. ``network: LocalProtocolError: Illegal header value b'Bearer '``.
    """
    for name, value in headers.items():
        if not name or _BAD_HEADER_NAME.search(name):
            return f"network: LocalProtocolError: Illegal header name {name.encode()!r}"
        if _BAD_HEADER_VALUE.search(value):
            return f"network: LocalProtocolError: Illegal header value {value.encode()!r}"
    return None


def response_content(response: HttpResponse, outgoing: Outgoing) -> dict[str, Any]:
    """The ``response`` entity content: ``{status, headers, body, url, method}``."""
    body = "" if response.body is None else response.body
    return {
        "status": response.status,
        "headers": dict(response.headers),
        "body": body,
        "url": outgoing.view,
        "method": outgoing.http.method,
    }


class ShownMemo:
    """How each response object is shown in an ``execute`` result, for a run whose world answers are
    replayed (``apiflow.agent.replay``): one response object is then shown to many trials, and its
    part of the result (everything after the ref) is the same text each time. Owned by the run; an
    entry holds its response, so an id is never matched to a newer object; emptied when full."""

    HELD = 65_536

    def __init__(self) -> None:
        self._texts: dict[int, tuple[HttpResponse, str]] = {}

    def shown(self, response: HttpResponse, headers: dict[str, str]) -> str:
        hit = self._texts.get(id(response))
        if hit is not None and hit[0] is response:
            return hit[1]
        if len(self._texts) >= self.HELD:
            self._texts.clear()
        text = shown_response(response, headers)
        self._texts[id(response)] = (response, text)
        return text


def shown_response(response: HttpResponse, headers: dict[str, str]) -> str:
    """The execute result's text after its ``response_ref``: ``, "status": …, "headers": …,
    "body_preview": …}``. The result is ``dumps`` of one dict whose items ``dumps`` writes in order
    joined by ``", "``, so it is ``{"response_ref": <ref>`` and this, whatever the ref."""
    return ", " + dumps({"status": response.status, "headers": headers, "body_preview": body_preview(response)})[1:]


def execute_request(
    workspace: Workspace,
    send: Send,
    content: dict[str, Any],
    request_ref: EntityRef | None,
    shown: ShownMemo | None = None,
) -> str:
    """Send request content and record it; returns the execute result string.

    Args:
        workspace: Where the request/response entities and the exchange are recorded.
        send: The world's transport.
        content: The request content (inline, or a written request entity's content).
        request_ref: The named request entity being executed, or None for an inline request
            (which then becomes ``request:req-<6 hex>``).
        shown: The run's memo of how replayed responses are shown (None: encode each time).

    Raises:
        ToolError: For requests the client refuses (``execute failed: ...``).
        LimitError: The workspace has no room for the request's entities (nothing is sent).
    """
    outgoing = build_outgoing(content)
    inline = request_ref is None
    # Room for the request and response entities, checked before the world sees the request:
    # a send whose evidence could not be stored would change the world unrecorded.
    workspace.ensure_room(2 if inline else 1)
    ref = make_ref("request", workspace.ids.request_id()) if request_ref is None else request_ref
    request_key = str(ref)  # the ref strings are made once here and handed on
    failure = wire_failure(outgoing.sent["headers"])
    response: HttpResponse | None = None
    if failure is None:
        try:
            response = send(outgoing.http)
        except TransportError as exc:
            if exc.kind != "network":
                raise ToolError(f"execute failed: {exc}") from None
            failure = str(exc)
    if inline:
        workspace.put_entity(ref, content, "execute", key=request_key, room_checked=True)
    if response is None:
        workspace.record_exchange(Exchange(request_key, None, outgoing.sent, None, failure))
        return dumps({"error": failure, "request_ref": request_key})
    response_id = workspace.ids.response_id()
    response_ref = make_ref("response", response_id, parent=ref)
    response_key = f"{request_key}/response:{response_id}"  # str(response_ref)
    seen = response_content(response, outgoing)
    workspace.put_entity(response_ref, seen, "execute", key=response_key, room_checked=True)
    workspace.record_exchange(Exchange(request_key, response_key, outgoing.sent, response))
    part = shown.shown(response, seen["headers"]) if shown is not None else shown_response(response, seen["headers"])
    return '{"response_ref": ' + dumps(response_key) + part
