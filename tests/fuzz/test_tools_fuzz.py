"""Fuzzing the seven tools: no argument a model can send makes an exception escape ``Toolbox.call``.

Each example plays a short sequence of calls against a real sample-bank world (so writes are
read back, refs resolve, requests reach the world's dispatcher), with schema-shaped arguments
near and far from valid, arbitrary JSON, JSON text (sometimes cut), odd unicode, and values JSON
cannot carry. Every result must keep its published shape and be writable as UTF-8.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiflow.agent.ids import derived_seed
from apiflow.tools import Toolbox, ToolResult, Workspace
from apiflow.tools.limits import TOOL_BOUNDS, TOOL_RESULT_CHARS
from apiflow.world import WorldSession

from .strategies import TOOL_NAMES, arguments, fuzz_settings, sample_bank, schema_shaped, tool_names

TASK = "sample-w01-chain-1to07"


def _toolbox() -> Toolbox:
    bank = sample_bank()
    task = bank.task(TASK)
    session = WorldSession(
        bank.world_of(task), derived_seed("world", 0, task.id, 1), state_overrides=task.world_state
    )
    workspace = Workspace(list(task.seed), session.spec_content(), id_seed=7)
    toolbox = Toolbox(workspace, session.send)
    # Entities the fuzzed refs name, so edits and reads reach their success paths too.
    for ref, content in _PRIMED:
        assert toolbox.call("write", {"entity_ref": ref, "content": content}).error is None
    return toolbox


_PRIMED = [
    ("request:x", {"protocol": "rest", "method": "GET", "url": "/v3/blocks"}),
    ("handle:x", {"note": "kept"}),
    ("variable:x", {"value": 1}),
]


def _shape_ok(name: Any, result: ToolResult) -> None:
    """The published result shapes (REFERENCE §2.3-§2.4), plus: always writable, always bounded."""
    assert isinstance(result, ToolResult)
    assert isinstance(result.content, str) and len(result.content) <= TOOL_RESULT_CHARS
    result.content.encode("utf-8")  # raises on a lone surrogate
    if result.error is not None:
        assert result.content == "" and result.terminated is None
        assert set(result.error) == {"type", "message"} and result.error["type"] in ("parsing", "unknown")
        assert isinstance(result.error["message"], str) and result.error["message"]
        result.error["message"].encode("utf-8")
        assert result.parse_error is (result.error["type"] == "parsing")
        assert result.limit is None or result.limit in TOOL_BOUNDS
        return
    assert result.limit is None and not result.parse_error
    content = result.content
    if name in ("read", "search", "execute"):
        decoded = json.loads(content)
    if name == "read":
        assert set(decoded) in ({"scope", "name", "value"}, {"ref", "content", "updated_at"})
    elif name == "search":
        assert isinstance(decoded, list)
        assert all(isinstance(h, str) or set(h) == {"kind", "id", "scope"} for h in decoded)
    elif name == "execute":
        assert set(decoded) in (
            {"response_ref", "status", "headers", "body_preview"},
            {"error", "request_ref"},
        )
    elif name == "write":
        assert content.startswith(("variable ", "entity ")) and content.endswith(" written")
    elif name == "edit":
        assert content.startswith("entity ") and "edited; keys set: [" in content
    else:
        assert name in ("clarify", "report_blocked") and result.terminated == name
        assert content.startswith(f"trial terminated ({name}): ")


def _evidence_writable(toolbox: Toolbox) -> None:
    """What grading reads (exchanges, entities, variables) encodes as JSON and UTF-8."""
    ws = toolbox.workspace
    evidence = [
        [e.request for e in ws.exchanges],
        [e.content for e in ws.all_entities() if e.ref.kind != "spec"],
        [v.value for v in ws.variables()],
    ]
    json.dumps(evidence, ensure_ascii=False).encode("utf-8")


calls = st.lists(st.tuples(st.sampled_from(TOOL_NAMES), arguments), min_size=1, max_size=6)


@fuzz_settings(300)
@given(calls)
def test_any_arguments_to_the_seven_tools(sequence: list[tuple[str, Any]]) -> None:
    toolbox = _toolbox()
    for name, args in sequence:
        _shape_ok(name, toolbox.call(name, args))
    _evidence_writable(toolbox)


# execute has the widest surface (request content reaches the world's dispatcher and rules).
PER_TOOL_EXAMPLES = {"execute": 200, "write": 100, "edit": 100}


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_schema_shaped_arguments_per_tool(name: str) -> None:
    @fuzz_settings(PER_TOOL_EXAMPLES.get(name, 60))
    @given(st.lists(schema_shaped(name), min_size=1, max_size=4))
    def run(sequence: list[dict[str, Any]]) -> None:
        toolbox = _toolbox()
        for args in sequence:
            _shape_ok(name, toolbox.call(name, args))
        _evidence_writable(toolbox)

    run()


@fuzz_settings(100)
@given(tool_names, arguments)
def test_any_tool_name(name: Any, args: Any) -> None:
    result = _toolbox().call(name, args)
    if name not in TOOL_NAMES:
        assert result.error is not None and result.error["type"] == "parsing"
        assert result.error["message"].startswith("Tool ") and result.error["message"].endswith(" not found")
    _shape_ok(name, result)
