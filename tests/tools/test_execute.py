"""execute: request encodings, URL pass-through, previews, statuses, transport faults, errors."""

from __future__ import annotations

import json
import random
import re

import pytest

from apiflow.tools import Toolbox, ToolError, Workspace
from apiflow.tools.execute import _server_view, body_preview, build_outgoing, server_view, wire_failure
from apiflow.world.errors import TransportError
from apiflow.world.http import HttpResponse

from .fakes import FakeWorld


def _execute(toolbox: Toolbox, **arguments: object) -> dict:
    result = toolbox.call("execute", arguments)
    assert result.error is None, result.error
    return json.loads(result.content)


def _execute_error(toolbox: Toolbox, **arguments: object) -> str:
    result = toolbox.call("execute", arguments)
    assert result.content == "" and result.error is not None and result.error["type"] == "unknown"
    return result.error["message"]


def test_success_result_is_json_dumps_of_the_published_keys(toolbox: Toolbox) -> None:
    result = toolbox.call(
        "execute",
        {
            "request": {
                "protocol": "rest",
                "method": "POST",
                "url": "/v2/oauth/token",
                "body": {"grant_type": "client_credentials"},
            }
        },
    )
    parsed = json.loads(result.content)
    assert list(parsed) == ["response_ref", "status", "headers", "body_preview"]
    assert result.content == json.dumps(parsed)
    assert parsed["body_preview"] == '{"access_token": "tk_quill_5521", "token_type": "Bearer"}'
    assert parsed["headers"]["content-length"] == "54"  # the world's compact body, not the preview


def test_dict_body_goes_as_json_and_string_body_raw(toolbox: Toolbox, world: FakeWorld) -> None:
    _execute(
        toolbox,
        request={"method": "POST", "url": "/v2/oauth/token", "body": {"grant_type": "client_credentials"}},
    )
    form = "grant_type=client_credentials&client_id=cid_quill_7"
    out = _execute(
        toolbox,
        request=json.dumps(
            {
                "method": "POST",
                "url": "/v2/oauth/token",
                "body": form,
                "headers": {"Content-Type": "application/x-www-form-urlencoded"},
            }
        ),
    )
    assert world.sent[0].body == {"grant_type": "client_credentials"}
    assert world.sent[1].body == form
    assert world.sent[1].headers == {"content-type": "application/x-www-form-urlencoded"}
    assert out["status"] == 200


def test_urls_pass_through_as_sent(toolbox: Toolbox, world: FakeWorld, workspace: Workspace) -> None:
    absolute = _execute(toolbox, request={"method": "GET", "url": "http://localhost:9001/v2/packets?limit=5"})
    _execute(toolbox, request={"method": "GET", "url": "/v2/packets"})
    assert [r.url for r in world.sent] == ["http://localhost:9001/v2/packets?limit=5", "/v2/packets"]
    read = json.loads(toolbox.call("read", {"entity_ref": absolute["response_ref"]}).content)
    assert read["content"]["url"] == "/v2/packets?limit=5"  # as the server saw it
    request = json.loads(toolbox.call("read", {"entity_ref": absolute["response_ref"].split("/")[0]}).content)
    assert request["content"] == {"method": "GET", "url": "http://localhost:9001/v2/packets?limit=5"}


def test_preview_is_cut_at_600_plus_ellipsis_and_read_has_the_full_body(toolbox: Toolbox) -> None:
    out = _execute(toolbox, request={"method": "GET", "url": "/v2/packets"})
    assert len(out["body_preview"]) == 601 and out["body_preview"].endswith("…")
    assert "\\u2014" in out["body_preview"]  # json.dumps of the body, ASCII-escaped
    full = json.loads(toolbox.call("read", {"entity_ref": out["response_ref"]}).content)["content"]["body"]
    assert len(full["packets"]) == 40


def test_body_preview_edges() -> None:
    assert body_preview(HttpResponse(200, {}, None)) == ""
    assert body_preview(HttpResponse(200, {}, "x" * 600)) == "x" * 600
    assert body_preview(HttpResponse(200, {}, "x" * 601)) == "x" * 600 + "…"
    assert body_preview(HttpResponse(200, {}, {"a": "é"})) == '{"a": "\\u00e9"}'
    assert body_preview(HttpResponse(200, {}, {"a": 1}, text="wire")) == "wire"  # the transport's text wins
    assert server_view("") == "/" and server_view("v3/a?b=1") == "/v3/a?b=1"


def test_error_statuses_are_results_not_errors(toolbox: Toolbox) -> None:
    out = _execute(toolbox, request={})
    assert (out["status"], out["body_preview"]) == (404, '{"detail": "Not Found"}')
    out = _execute(
        toolbox, request={"method": "POST", "url": "/v2/oauth/token", "body": "grant_type=password"}
    )
    assert out["status"] == 400


def test_text_bodies_preview_raw(toolbox: Toolbox) -> None:
    assert _execute(toolbox, request={"url": "/v2/notes"})["body_preview"] == "plain text note"


def test_mode_has_no_effect() -> None:
    outs = []
    for mode in (None, "stream", "debug"):
        toolbox = Toolbox(Workspace([], {}, id_seed=5), FakeWorld().send)
        arguments: dict = {"request": {"url": "/v2/packets"}} | ({"mode": mode} if mode else {})
        outs.append(toolbox.call("execute", arguments).content)
    assert outs[0] == outs[1] == outs[2]


def test_graphql_and_mcp_become_http_posts_the_world_answers_404(toolbox: Toolbox, world: FakeWorld) -> None:
    gql = _execute(
        toolbox, request={"protocol": "graphql", "query": "{ packets { id } }", "variables": {"a": 1}}
    )
    mcp = _execute(toolbox, request='{"protocol": "mcp", "tool": "list_packets", "arguments": {"limit": 2}}')
    assert gql["status"] == mcp["status"] == 404
    assert (world.sent[0].method, world.sent[0].url) == ("POST", "/graphql")
    assert world.sent[0].body == {"query": "{ packets { id } }", "variables": {"a": 1}}
    assert (world.sent[1].method, world.sent[1].url) == ("POST", "/mcp")
    assert world.sent[1].body["params"] == {"name": "list_packets", "arguments": {"limit": 2}}
    content = json.loads(toolbox.call("read", {"entity_ref": gql["response_ref"].split("/")[0]}).content)[
        "content"
    ]
    assert content["protocol"] == "graphql"  # the request entity keeps what the agent wrote


def test_network_error_is_a_successful_result(
    toolbox: Toolbox, world: FakeWorld, workspace: Workspace
) -> None:
    world.fault = TransportError("network: ConnectError: All connection attempts failed")
    result = toolbox.call("execute", {"request": {"url": "http://elsewhere:1/x"}})
    assert result.error is None
    out = json.loads(result.content)
    assert list(out) == ["error", "request_ref"]
    assert out["error"] == "network: ConnectError: All connection attempts failed"
    assert result.content == json.dumps(out)
    exchange = workspace.exchanges[-1]
    assert (exchange.response, exchange.response_ref, exchange.network_error) == (None, None, out["error"])
    assert toolbox.call("read", {"entity_ref": out["request_ref"]}).error is None


def test_illegal_header_value_is_a_network_result(toolbox: Toolbox, world: FakeWorld) -> None:
    out = _execute(toolbox, request={"url": "/v2/packets", "headers": {"Authorization": "Bearer "}})
    assert out["error"] == "network: LocalProtocolError: Illegal header value b'Bearer '"
    assert world.sent == []


@pytest.mark.parametrize(
    ("request_content", "message"),
    [
        (
            {"url": "/x", "headers": {"X-Meta": {"a": 1}}},
            "execute failed: Header value must be str or bytes, not <class 'dict'>",
        ),
        (
            {"url": "/x", "headers": {"X-Retry-Pass": 1}},
            "execute failed: Header value must be str or bytes, not <class 'int'>",
        ),
        (
            {"method": "POST", "url": "/x", "headers": {"Content-Length": "2"}, "body": {"confirm": True}},
            "execute failed: Too much data for declared Content-Length",
        ),
    ],
)
def test_client_refusals_are_execute_failed_errors(
    toolbox: Toolbox, world: FakeWorld, request_content: dict, message: str
) -> None:
    assert _execute_error(toolbox, request=request_content) == message
    assert world.sent == []


def test_world_refusal_is_an_execute_failed_error(
    toolbox: Toolbox, world: FakeWorld, workspace: Workspace
) -> None:
    world.fault = TransportError("Header value must be str or bytes, not <class 'list'>", kind="invalid")
    assert _execute_error(toolbox, request={"url": "/x"}) == (
        "execute failed: Header value must be str or bytes, not <class 'list'>"
    )
    assert workspace.exchanges == [] and workspace.entities == {}


def test_argument_errors(toolbox: Toolbox) -> None:
    exactly_one = "Provide exactly one of `target` (entity ref) or `request` (inline content)."
    assert _execute_error(toolbox) == exactly_one
    assert _execute_error(toolbox, request={"url": "/x"}, target="request:a") == exactly_one
    assert (
        _execute_error(toolbox, request="GET /v2/packets")
        == "`request` must be an object holding the request content."
    )
    assert (
        _execute_error(toolbox, request="[1, 2]")
        == "`request` must be an object holding the request content."
    )
    assert _execute_error(toolbox, target={"kind": "response", "id": "resp-1"}) == (
        "execute() target must be a request entity, got kind='response'."
    )
    assert _execute_error(toolbox, target="request:test") == (
        "Request request:test not in workspace; create it with `write` first."
    )


def test_declared_length_takes_the_first_name_as_sent_when_two_differ_only_in_case(
    toolbox: Toolbox, world: FakeWorld
) -> None:
    # The lowered header map keeps the last of two such names; the client reads the first.
    first_small = {"Content-Length": "2", "content-length": "999"}
    assert _execute_error(
        toolbox, request={"method": "POST", "url": "/x", "headers": first_small, "body": "abc"}
    ) == ("execute failed: Too much data for declared Content-Length")
    first_large = {"Content-Length": "999", "content-length": "2"}
    _execute(toolbox, request={"method": "POST", "url": "/x", "headers": first_large, "body": "abc"})
    assert len(world.sent) == 1


def test_the_remembered_server_view_is_server_view() -> None:
    for url in ["", "/", "v3/a?b=1", "http://h:1/a/b?c=d&e", "http://[::1]:9/x", "/p?" + "q" * 50, "//x/y"]:
        assert _server_view(url) == server_view(url) == _server_view(url)
    for bad in ["http://[::1/x", "http://a]b/"]:
        with pytest.raises(ValueError) as plain:
            server_view(bad)
        with pytest.raises(ValueError) as remembered:
            _server_view(bad)
        assert str(remembered.value) == str(plain.value)


def _plain_wire_failure(headers: dict[str, str]) -> str | None:
    # The rule spelled plainly: a name search, a strip and a value search per header.
    for name, value in headers.items():
        if not name or re.search(r"[ \t:\r\n\x00]", name):
            return f"network: LocalProtocolError: Illegal header name {name.encode()!r}"
        if value != value.strip(" \t") or re.search(r"[\r\n\x00]", value):
            return f"network: LocalProtocolError: Illegal header value {value.encode()!r}"
    return None


def test_wire_failure_is_the_plain_check() -> None:
    rng = random.Random(11)
    pieces = ["a", "B", "x-id", " ", "\t", ":", "\r", "\n", "\x00", "Bearer tk", "é", ""]
    for _ in range(3000):
        headers = {
            "".join(rng.choices(pieces, k=rng.randrange(0, 3))): "".join(
                rng.choices(pieces, k=rng.randrange(0, 4))
            )
            for _ in range(rng.randrange(1, 4))
        }
        assert wire_failure(headers) == _plain_wire_failure(headers), headers


class _Text(str):
    """A str subclass: accepted as a header value, as the client accepts it."""


def test_inline_request_reading_refuses_and_accepts_as_the_checks_did() -> None:
    def outcome(headers: object) -> object:
        try:
            out = build_outgoing({"method": "get", "url": "/a", "headers": headers, "body": {"k": 1}})
        except ToolError as exc:
            return exc.message
        return out.http.headers, out.sent["headers"], out.http.method

    assert outcome(None) == ({}, {}, "GET") and outcome({}) == ({}, {}, "GET")
    assert outcome({"A": "1", "b": _Text("2")}) == ({"a": "1", "b": "2"}, {"A": "1", "b": "2"}, "GET")
    assert outcome(["x"]) == (
        "execute failed: headers must be an object of name: value strings, not <class 'list'>"
    )
    # The first value that is not a string is the one named, wherever it stands.
    for headers in ({"a": 1, "b": None}, {"a": "1", "b": 2.5, "c": None}, {"a": "1", "b": [], "c": 3}):
        first = next(v for v in headers.values() if not isinstance(v, str))
        assert outcome(headers) == f"execute failed: Header value must be str or bytes, not {type(first)}"
    # A method or URL that is not a string is refused before the headers are looked at.
    with pytest.raises(ToolError, match="method must be a string"):
        build_outgoing({"method": 1, "url": "/a", "headers": {"a": 1}})
    with pytest.raises(ToolError, match="url must be a string"):
        build_outgoing({"url": ["/a"], "headers": ["x"]})
