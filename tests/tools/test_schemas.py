"""Tool schemas are derived from the tool functions and pinned by a snapshot.

To accept an intended change: ``APIFLOW_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/tools/test_schemas.py``
and commit the new ``snapshots/tool_schemas.json`` with the code change.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

from apiflow.tools import tool_schemas
from apiflow.tools.contract import TOOL_FUNCTIONS

SNAPSHOT = Path(__file__).parent / "snapshots" / "tool_schemas.json"


def test_schemas_match_the_snapshot() -> None:
    current = json.dumps(tool_schemas(), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("APIFLOW_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == current, (
        "tool schemas changed: see this module's docstring"
    )


def test_schemas_follow_the_signatures() -> None:
    schemas = {s["function"]["name"]: s["function"] for s in tool_schemas()}
    assert list(schemas) == ["read", "write", "edit", "search", "execute", "clarify", "report_blocked"]
    for func in TOOL_FUNCTIONS:
        params = list(inspect.signature(func).parameters.values())[1:]
        schema = schemas[func.__name__]
        assert list(schema["parameters"]["properties"]) == [p.name for p in params]
        required = [p.name for p in params if p.default is inspect.Parameter.empty]
        assert schema["parameters"]["required"] == required
        assert schema["parameters"]["additionalProperties"] is False
        assert schema["description"] and all(
            p.get("description") for p in schema["parameters"]["properties"].values()
        )


def test_tool_schemas_returns_fresh_copies() -> None:
    tool_schemas()[0]["function"]["name"] = "mutated"
    assert tool_schemas()[0]["function"]["name"] == "read"
