"""Every tool's success and error shapes, as the published transcripts show them."""

from __future__ import annotations

import json

from apiflow.tools import Toolbox, Workspace

PYDANTIC_URL = "https://errors.pydantic.dev/2.13/v/model_type"


def _ok(toolbox: Toolbox, name: str, arguments: dict | str) -> str:
    result = toolbox.call(name, arguments)
    assert result.error is None, result.error
    assert not result.parse_error
    return result.content


def _err(toolbox: Toolbox, name: str, arguments: dict | str, error_type: str = "unknown") -> str:
    result = toolbox.call(name, arguments)
    assert result.content == ""
    assert result.error is not None and result.error["type"] == error_type
    assert result.parse_error is (error_type == "parsing")
    return result.error["message"]


def _mint(toolbox: Toolbox) -> dict:
    request = {
        "protocol": "rest",
        "method": "POST",
        "url": "http://localhost:9001/v2/oauth/token",
        "headers": {"Content-Type": "application/x-www-form-urlencoded"},
        "body": "grant_type=client_credentials&client_id=cid_quill_7&client_secret=csec_quill_b2",
    }
    return json.loads(_ok(toolbox, "execute", {"request": request}))


# -- read ---------------------------------------------------------------------------------------


def test_read_variable_searches_vault_local_global(toolbox: Toolbox) -> None:
    out = _ok(toolbox, "read", {"entity_ref": {"kind": "variable", "id": "client_id"}})
    assert out == '{"scope": "vault", "name": "client_id", "value": "cid_quill_7"}'
    out = _ok(toolbox, "read", {"entity_ref": '{"kind": "variable", "id": "region"}'})
    assert out == '{"scope": "global", "name": "region", "value": "eu-west"}'


def test_read_variable_not_found_texts(toolbox: Toolbox) -> None:
    msg = _err(toolbox, "read", {"entity_ref": {"kind": "variable", "id": "base_url"}})
    assert msg == "Variable 'base_url' not found in scope(s): vault, local, global"
    msg = _err(toolbox, "read", {"entity_ref": {"kind": "variable", "id": "region"}, "scope": "vault"})
    assert msg == "Variable 'region' not found in scope(s): vault"
    msg = _err(toolbox, "read", {"entity_ref": {"kind": "variable", "id": "client_id"}, "scope": " "})
    assert msg == "Variable 'client_id' not found in scope(s):  "


def test_read_spec_is_pretty_json_with_ascii_escapes(toolbox: Toolbox) -> None:
    out = _ok(toolbox, "read", {"entity_ref": "spec:openapi", "scope": None})
    assert out.startswith('{\n  "ref": "spec:openapi",\n  "content": {\n    "format": "openapi-3.1",')
    assert "\\u2014" in out and "—" not in out
    parsed = json.loads(out)
    assert out == json.dumps(parsed, indent=2)
    assert parsed["updated_at"].endswith("+00:00") and len(parsed["updated_at"].split(".")[1]) == 12


def test_read_response_needs_its_parent(toolbox: Toolbox) -> None:
    ref = _mint(toolbox)["response_ref"]
    request_id, response_id = ref.split("/")[0].split(":")[1], ref.split(":")[-1]
    msg = _err(toolbox, "read", {"entity_ref": {"kind": "response", "id": response_id}})
    assert msg == f"Entity response:{response_id} not found."
    by_string = json.loads(_ok(toolbox, "read", {"entity_ref": ref}))
    by_object = json.loads(
        _ok(
            toolbox,
            "read",
            {
                "entity_ref": {
                    "kind": "response",
                    "id": response_id,
                    "parent": {"kind": "request", "id": request_id},
                }
            },
        )
    )
    assert by_string == by_object
    content = by_string["content"]
    assert list(content) == ["status", "headers", "body", "url", "method"]
    assert content["status"] == 200 and content["body"]["access_token"] == "tk_quill_5521"
    assert content["url"] == "/v2/oauth/token" and content["method"] == "POST"


def test_read_string_parent_is_the_published_pydantic_error(toolbox: Toolbox) -> None:
    ref = {"kind": "response", "id": "resp-0000aaaa", "parent": "request:req-abcdef"}
    msg = _err(toolbox, "read", {"entity_ref": ref})
    assert msg == (
        "Invalid entity_ref: 1 validation error for EntityRef\nparent\n"
        "  Input should be a valid dictionary or instance of EntityRef "
        "[type=model_type, input_value='request:req-abcdef', input_type=str]\n"
        f"    For further information visit {PYDANTIC_URL}"
    )


def test_read_unknown_entity(toolbox: Toolbox) -> None:
    assert _err(toolbox, "read", {"entity_ref": "spec:openapi.yaml"}) == "Entity spec:openapi.yaml not found."


# -- write / edit ---------------------------------------------------------------------------------


def test_write_variable_default_scope_local_and_json_string_encodings(
    toolbox: Toolbox, workspace: Workspace
) -> None:
    out = _ok(
        toolbox,
        "write",
        {"entity_ref": '{"kind": "variable", "id": "token"}', "content": '{"value": "tk_1"}'},
    )
    assert out == "variable local:token written"
    assert ("local", "token") in workspace.changed_variables
    out = _ok(
        toolbox,
        "write",
        {"entity_ref": {"kind": "variable", "id": "x"}, "content": {"value": 3}, "scope": "global"},
    )
    assert out == "variable global:x written"


def test_write_garbage_scope_is_accepted(toolbox: Toolbox, workspace: Workspace) -> None:
    assert _ok(toolbox, "write", {"entity_ref": "variable:ep", "content": {"value": 1}, "scope": '">'}) == (
        'variable ">:ep written'
    )
    assert ('">', "ep", 1) in workspace.variables()


def test_write_errors(toolbox: Toolbox) -> None:
    msg = _err(toolbox, "write", {"entity_ref": "variable:v", "content": {"v3_ids": [1]}})
    assert msg == "write(variable, ...): content must include `value`."
    msg = _err(toolbox, "write", {"entity_ref": "variable:v", "content": "tk_crop_8821"})
    assert msg.startswith("write(...): `content` must be a JSON object, not a string. Pass it as an object,")
    msg = _err(toolbox, "write", {"entity_ref": "response:resp-1", "content": {"status": 200}})
    assert "read-only" in msg


def test_write_request_then_execute_target(toolbox: Toolbox, world) -> None:
    request = {
        "protocol": "rest",
        "method": "GET",
        "url": "/v2/packets",
        "headers": {"Authorization": "Bearer x"},
    }
    assert _ok(
        toolbox, "write", {"entity_ref": {"kind": "request", "id": "list-packets"}, "content": request}
    ) == ("entity request:list-packets written")
    out = json.loads(_ok(toolbox, "execute", {"target": {"kind": "request", "id": "list-packets"}}))
    assert out["response_ref"].startswith("request:list-packets/response:resp-")
    assert world.sent[-1].headers == {"authorization": "Bearer x"}


def test_edit_shallow_merge_and_errors(toolbox: Toolbox) -> None:
    _ok(
        toolbox,
        "write",
        {"entity_ref": "request:commit", "content": {"method": "POST", "url": "/x", "body": {"a": 1}}},
    )
    out = _ok(toolbox, "edit", {"entity_ref": "request:commit", "patch": '{"body": {"confirm": true}}'})
    assert out == "entity request:commit edited; keys set: ['body']"
    content = json.loads(_ok(toolbox, "read", {"entity_ref": "request:commit"}))["content"]
    assert content == {"method": "POST", "url": "/x", "body": {"confirm": True}}
    assert _err(toolbox, "edit", {"entity_ref": "variable:client_id", "patch": {"value": 1}}) == (
        "edit on `variable` is not supported — use `write` to replace."
    )
    assert _err(toolbox, "edit", {"entity_ref": "request:commit", "patch": "confirm"}) == (
        "edit(...): `patch` must be a JSON object of keys to set, not a string."
    )
    assert _err(toolbox, "edit", {"entity_ref": "request:foo", "patch": {}}) == (
        "Cannot edit non-existent entity request:foo. Use `write` first."
    )


def test_handle_entities(toolbox: Toolbox) -> None:
    assert (
        _ok(toolbox, "write", {"entity_ref": "handle:trk-1", "content": {"n": 1}})
        == "entity handle:trk-1 written"
    )
    assert _ok(toolbox, "edit", {"entity_ref": "handle:trk-1", "patch": {"m": 2}}) == (
        "entity handle:trk-1 edited; keys set: ['m']"
    )


# -- clarify / report_blocked -----------------------------------------------------------------------


def test_abstentions_terminate(toolbox: Toolbox) -> None:
    result = toolbox.call("clarify", {"question": "Which region?"})
    assert (result.content, result.terminated) == ("trial terminated (clarify): Which region?", "clarify")
    result = toolbox.call("report_blocked", '{"reason": "no write scope"}')
    assert (result.content, result.terminated) == (
        "trial terminated (report_blocked): no write scope",
        "report_blocked",
    )


# -- argument parsing -------------------------------------------------------------------------------


def test_unknown_and_missing_arguments_are_parsing_errors(toolbox: Toolbox) -> None:
    msg = _err(
        toolbox, "execute", {"protocol": "rest", "method": "GET", "url": "/x", "headers": {}}, "parsing"
    )
    assert msg == (
        "Found 1 validation errors parsing tool input arguments:\n"
        "- Additional properties are not allowed ('headers', 'method', 'protocol', 'url' were unexpected)"
    )
    msg = _err(toolbox, "read", {}, "parsing")
    assert (
        msg
        == "Found 1 validation errors parsing tool input arguments:\n- 'entity_ref' is a required property"
    )


def test_malformed_json_arguments(toolbox: Toolbox) -> None:
    msg = _err(toolbox, "search", '{"query": ', "parsing")
    assert msg.startswith('Error parsing the following tool call arguments:\n\n{"query": \n\nError details: ')


def test_unknown_tool(toolbox: Toolbox) -> None:
    assert _err(toolbox, "submit", {}, "parsing") == "Tool submit not found"
