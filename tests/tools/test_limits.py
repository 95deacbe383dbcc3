"""The tool bounds: each refuses with a tool error naming it and its value, and nothing escapes."""

from __future__ import annotations

import json

import pytest

from apiflow.tools import Toolbox, Workspace
from apiflow.tools.limits import (
    ARGUMENT_CHARS,
    ARGUMENT_DEPTH,
    TOOL_BOUNDS,
    WORKSPACE_CHARS,
    WORKSPACE_ENTITIES,
    LimitError,
    NotJson,
    loads_bounded,
    preview,
    scan,
    writable_text,
)

from .fakes import FakeWorld


def _limited(toolbox: Toolbox, name: str, arguments: object, limit: str) -> str:
    result = toolbox.call(name, arguments)  # type: ignore[arg-type]
    assert result.content == "" and result.error is not None and result.error["type"] == "unknown"
    assert result.limit == limit and not result.parse_error
    assert f"(limit {limit} = {TOOL_BOUNDS[limit]:,})" in result.error["message"]
    return result.error["message"]


def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth - 1):
        value = [value]
    return value


def test_every_bound_is_a_documented_constant() -> None:
    import ast
    import inspect

    import apiflow.tools.limits as limits

    body = ast.parse(inspect.getsource(limits)).body
    documented = {
        node.target.id
        for node, after in zip(body, body[1:], strict=False)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
        and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
    }  # fmt: skip
    assert {name.upper() for name in TOOL_BOUNDS} <= documented
    assert all(getattr(limits, name.upper()) == value for name, value in TOOL_BOUNDS.items())


def test_argument_size_as_dict_and_as_string(toolbox: Toolbox) -> None:
    big = "x" * (ARGUMENT_CHARS + 1)
    _limited(toolbox, "search", {"query": big}, "argument_chars")
    _limited(toolbox, "search", json.dumps({"query": big}), "argument_chars")
    # Just under the bound is an ordinary call.
    assert toolbox.call("search", {"query": "x" * (ARGUMENT_CHARS - 100)}).error is None


def test_argument_depth_as_dict_string_and_inner_string(toolbox: Toolbox) -> None:
    deep = {"value": _nested(ARGUMENT_DEPTH)}
    _limited(toolbox, "write", {"entity_ref": "variable:v", "content": deep}, "argument_depth")
    # 100,000 levels of JSON text break json.loads' recursion: a bound, not a crash.
    message = _limited(toolbox, "search", '{"query": ' + "[" * 100_000, "argument_depth")
    assert "nests deeper than 64" in message
    _limited(toolbox, "write", {"entity_ref": "handle:h", "content": "[" * 50_000}, "argument_depth")
    _limited(toolbox, "read", {"entity_ref": "request:a/" * 70 + "request:b"}, "argument_depth")
    ok = {"entity_ref": "variable:v", "content": {"value": _nested(ARGUMENT_DEPTH - 3)}}
    assert toolbox.call("write", ok).error is None


def test_values_json_cannot_carry_are_parsing_errors(toolbox: Toolbox) -> None:
    for value in (float("nan"), float("inf"), 10**5000, {1, 2}, b"x", object()):
        result = toolbox.call("write", {"entity_ref": "variable:v", "content": {"value": value}})
        assert result.error is not None and result.error["type"] == "parsing", value
        assert result.error["message"].startswith("The tool call arguments are not JSON: ")
    result = toolbox.call("write", {"entity_ref": "variable:v", "content": {1: "int key"}})
    assert result.parse_error
    assert toolbox.call("search", '{"query": NaN}').parse_error  # json.loads would accept NaN
    assert toolbox.call("search", [1, 2]).parse_error  # type: ignore[arg-type]
    assert toolbox.call(None, {}).error == {"type": "parsing", "message": "Tool null not found"}  # type: ignore[arg-type]


def test_cyclic_arguments_are_a_depth_bound(toolbox: Toolbox) -> None:
    loop: dict = {"kind": "request"}
    loop["parent"] = loop
    _limited(toolbox, "read", {"entity_ref": loop}, "argument_depth")


def test_lone_surrogates_are_repaired_before_the_tools(toolbox: Toolbox, workspace: Workspace) -> None:
    assert (
        toolbox.call("write", {"entity_ref": "variable:s\ud800", "content": {"value": "a\udfffb"}}).error
        is None
    )
    (value,) = [v for v in workspace.variables() if v.name.startswith("s")]
    assert (value.name, value.value) == ("s\ufffd", "a\ufffdb")
    assert writable_text("\ud83d\ude00") == "\U0001f600"  # a pair written as two code units is joined
    result = toolbox.call(
        "execute", {"request": {"method": "POST", "url": "/v2/notes\ud800", "body": "\udc00"}}
    )
    assert result.error is None
    json.dumps([e.request for e in workspace.exchanges], ensure_ascii=False).encode("utf-8")


def test_tool_result_size(toolbox: Toolbox) -> None:
    chunk = {"value": "y" * (ARGUMENT_CHARS - 100)}
    for i in range(5):
        assert toolbox.call("write", {"entity_ref": f"variable:big{i}", "content": chunk}).error is None
    # A variable as large as an argument may be reads back; refs as long as arguments add up in a search.
    assert toolbox.call("read", {"entity_ref": "variable:big0"}).error is None
    for i in range(6):
        toolbox.call("write", {"entity_ref": {"kind": "handle", "id": "h" * 200_000 + str(i)}, "content": {}})
    _limited(toolbox, "search", {"query": "h"}, "tool_result_chars")


def test_workspace_entities_bound_is_checked_before_the_world_sees_a_request(world: FakeWorld) -> None:
    workspace = Workspace([], {"format": "openapi-3.1"}, id_seed=1)
    toolbox = Toolbox(workspace, world.send)
    for i in range(WORKSPACE_ENTITIES - 2):
        assert toolbox.call("write", {"entity_ref": f"variable:v{i}", "content": {"value": i}}).error is None
    _limited(toolbox, "execute", {"request": {"method": "GET", "url": "/v2/packets"}}, "workspace_entities")
    assert world.sent == [] and workspace.exchanges == []  # nothing reached the world unrecorded
    assert toolbox.call("write", {"entity_ref": "variable:v0", "content": {"value": "again"}}).error is None
    assert toolbox.call("write", {"entity_ref": "handle:new", "content": {}}).error is None  # the last place
    _limited(toolbox, "write", {"entity_ref": "variable:new", "content": {"value": 1}}, "workspace_entities")
    _limited(toolbox, "write", {"entity_ref": "handle:newer", "content": {}}, "workspace_entities")


def test_workspace_chars_bound_counts_what_the_model_stored(toolbox: Toolbox, workspace: Workspace) -> None:
    chunk = {"value": "z" * (ARGUMENT_CHARS - 100)}
    calls = 0
    while workspace.stored_chars + ARGUMENT_CHARS <= WORKSPACE_CHARS:
        assert toolbox.call("write", {"entity_ref": "variable:same", "content": chunk}).error is None
        calls += 1
    stored = workspace.stored_chars
    _limited(toolbox, "write", {"entity_ref": "variable:same", "content": chunk}, "workspace_chars")
    assert workspace.stored_chars == stored and calls == WORKSPACE_CHARS // ARGUMENT_CHARS
    assert toolbox.call("read", {"entity_ref": "variable:same"}).error is None  # reading is not storing


def test_scan_and_loads_bounded_directly() -> None:
    assert scan({"a": [1, "b"]}).value == {"a": [1, "b"]}
    same = {"a": ["é"]}
    assert scan(same).value is same  # nothing to repair: no copy
    scan(_nested(ARGUMENT_DEPTH + 1))  # 64 containers around a leaf: at the bound
    with pytest.raises(LimitError):
        scan(_nested(ARGUMENT_DEPTH + 2))
    with pytest.raises(NotJson):
        scan({"a": float("nan")})
    with pytest.raises(ValueError, match="Infinity is not valid JSON"):
        loads_bounded("[Infinity]")
    assert loads_bounded('"\\ud800"') == "\ufffd"


def test_preview_never_raises_and_stays_short() -> None:
    class Opaque:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    loop: list = []
    loop.append(loop)
    for value in (Opaque(), loop, {1: float("nan")}, 10**5000, "\ud800" * 5, "x" * 10_000, _nested(10_000)):
        text = preview(value)
        text.encode("utf-8")
        assert len(text) <= 2001
