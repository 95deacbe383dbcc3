"""JSON schemas of the seven tools, derived from the tool functions themselves.

A tool's parameters come from its signature (types via pydantic), its descriptions from its
Google-style docstring (summary paragraph and ``Args:``). Nothing here is written by hand,
so code and schema cannot drift; ``tests/tools/test_schemas.py`` pins the result.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import json
import re
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import Field, create_model

from apiflow.tools.contract import TOOL_FUNCTIONS

_ARG_LINE = re.compile(r"^(?P<name>\w+): (?P<text>.*)$")


def _docstring_parts(func: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The summary paragraph and the ``Args:`` descriptions of a Google-style docstring."""
    doc = inspect.getdoc(func) or ""
    summary, _, rest = doc.partition("\n\n")
    args: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in rest.splitlines():
        if line.strip() == "Args:":
            in_args = True
            continue
        if not in_args:
            continue
        if line and not line.startswith(" "):
            break  # the next section
        match = (
            _ARG_LINE.match(line.strip())
            if line.startswith("    ") and not line.startswith("     ")
            else None
        )
        if match:
            current = match["name"]
            args[current] = match["text"]
        elif current and line.strip():
            args[current] += " " + line.strip()
    return " ".join(summary.split()), args


def _clean(node: Any) -> Any:
    """Drop pydantic's titles and the default ``additionalProperties: true`` of a plain dict."""
    if isinstance(node, dict):
        return {
            k: _clean(v)
            for k, v in node.items()
            if k != "title" and not (k == "additionalProperties" and v is True)
        }
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


def parameters_schema(func: Callable[..., Any]) -> dict[str, Any]:
    """The JSON schema of a tool's parameters (every parameter after the context)."""
    hints = typing.get_type_hints(func)
    _, arg_docs = _docstring_parts(func)
    fields: dict[str, Any] = {}
    for name, param in list(inspect.signature(func).parameters.items())[1:]:
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (hints[name], Field(default, description=arg_docs.get(name)))
    model = create_model(f"{func.__name__}_arguments", **fields)
    raw = _clean(model.model_json_schema())
    properties = {
        name: {k: v for k, v in prop.items() if k != "default"} for name, prop in raw["properties"].items()
    }
    return {
        "type": "object",
        "properties": properties,
        "required": raw.get("required", []),
        "additionalProperties": False,
    }


@cache
def _schemas() -> dict[str, dict[str, Any]]:
    out = {}
    for func in TOOL_FUNCTIONS:
        summary, _ = _docstring_parts(func)
        out[func.__name__] = {
            "type": "function",
            "function": {
                "name": func.__name__,
                "description": summary,
                "parameters": parameters_schema(func),
            },
        }
    return out


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI function-tool schemas of the seven tools, in offer order (fresh copies)."""
    return [copy.deepcopy(s) for s in _schemas().values()]


@cache
def offered_schemas() -> list[dict[str, Any]]:
    """The one schema list the harness offers every model (read-only: nothing may edit it)."""
    return tool_schemas()


@cache
def offered_schemas_chars() -> int:
    """``len(json.dumps(offered_schemas()))``: a constant of the code (an offline model's token meter
    counts the schemas in its first call's prompt)."""
    return len(json.dumps(offered_schemas()))


@cache
def tool_schema_hash() -> str:
    """sha256 of the tool schemas every model sees: part of every trial id (a constant of the code)."""
    canonical = json.dumps(list(_schemas().values()), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def parameters_for(name: str) -> dict[str, Any] | None:
    """The (shared, read-only) parameters schema of the named tool, or None for an unknown tool."""
    spec = _schemas().get(name)
    return None if spec is None else spec["function"]["parameters"]
