"""The seven-tool contract (read, write, edit, search, execute, clarify, report_blocked).

Public face: ``Workspace`` (entities, scoped variables, evidence), ``Toolbox`` (the call
dispatcher), ``ToolResult``, ``tool_schemas()`` and ``EntityRef``. See
``docs/design/020-tool-contract.md`` for what is published-exact and what is ours.
"""

from apiflow.tools.refs import EntityRef, parse_entity_ref
from apiflow.tools.result import ArgumentError, ToolError, ToolResult
from apiflow.tools.schemas import tool_schema_hash, tool_schemas
from apiflow.tools.toolbox import Toolbox
from apiflow.tools.workspace import Entity, Exchange, SeedLike, VariableValue, Workspace

__all__ = [
    "ArgumentError",
    "Entity",
    "EntityRef",
    "Exchange",
    "SeedLike",
    "ToolError",
    "ToolResult",
    "Toolbox",
    "VariableValue",
    "Workspace",
    "parse_entity_ref",
    "tool_schema_hash",
    "tool_schemas",
]
