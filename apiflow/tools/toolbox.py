"""``Toolbox.call``: the one door through which a model's tool call reaches the tools.

Flow of a call: decode the arguments (a dict or a JSON string), validate them against the
tool's derived schema, run the tool. What fails before the tool runs is a ``parsing``
error (counted by the agent loop as a malformed call); what the tool refuses is an
``unknown`` error; both come back with empty content, as published. Any other exception is
a harness bug and propagates: it must never look like a model failure.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from apiflow.tools.arguments import QuickCheck, decode_arguments, quick_check, validate_arguments
from apiflow.tools.contract import TERMINATING_TOOLS, TOOL_FUNCTIONS, ToolContext
from apiflow.tools.execute import Send
from apiflow.tools.result import ArgumentError, ToolError, ToolResult
from apiflow.tools.schemas import parameters_for
from apiflow.tools.workspace import Workspace

_FUNCTIONS: dict[str, Callable[..., str]] = {f.__name__: f for f in TOOL_FUNCTIONS}


def _parameters(name: str) -> dict[str, Any]:
    schema = parameters_for(name)
    assert schema is not None, f"tool {name} has no schema"  # both come from TOOL_FUNCTIONS
    return schema


@cache
def _quick_check(name: str) -> QuickCheck | None:
    # Keyed by tool name: the schemas are constants of the code.
    return quick_check(_parameters(name))


class Toolbox:
    """The seven tools bound to one trial's workspace and world.

    Args:
        workspace: The trial's workspace.
        send: The world's transport (``WorldSession.send``).
    """

    def __init__(self, workspace: Workspace, send: Send) -> None:
        self.workspace = workspace
        self._context = ToolContext(workspace=workspace, send=send)

    def call(self, name: str, arguments: dict[str, Any] | str) -> ToolResult:
        """Run one tool call and return its result in the published shape.

        Args:
            name: Tool name (read, write, edit, search, execute, clarify, report_blocked).
            arguments: The arguments object, or its JSON encoding.
        """
        function = _FUNCTIONS.get(name)
        if function is None:
            return ToolResult.failed("parsing", f"Tool {name} not found")
        try:
            decoded = decode_arguments(arguments)
            quick = _quick_check(name)
            if quick is None or not quick.admits(decoded):
                validate_arguments(decoded, _parameters(name))
        except ArgumentError as exc:
            return ToolResult.failed("parsing", exc.message)
        try:
            content = function(self._context, **decoded)
        except ToolError as exc:
            return ToolResult.failed("unknown", exc.message)
        terminated = name if name in TERMINATING_TOOLS else None
        return ToolResult.ok(content, terminated)  # type: ignore[arg-type]
