"""``Toolbox.call``: the one door through which a model's tool call reaches the tools.

Flow of a call: decode the arguments (a dict or a JSON string), validate them against the
tool's derived schema, run the tool. What fails before the tool runs is a ``parsing``
error (counted by the agent loop as a malformed call); what the tool refuses is an
``unknown`` error; both come back with empty content, as published. A call over one of the
bounds of ``apiflow.tools.limits`` (argument size or depth, result size, workspace size) is an
``unknown`` error naming the bound, with ``ToolResult.limit`` set so the trial records it. Any
other exception is a harness bug and propagates: it must never look like a model failure.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from apiflow.exact import exact_bytes
from apiflow.tools.arguments import QuickCheck, decode_arguments, quick_check, validate_arguments
from apiflow.tools.contract import TERMINATING_TOOLS, TOOL_FUNCTIONS, ToolContext
from apiflow.tools.execute import Send, ShownMemo
from apiflow.tools.limits import TOOL_RESULT_CHARS, LimitError, NotJson, Scan, preview, scan
from apiflow.tools.result import ArgumentError, ToolError, ToolResult
from apiflow.tools.schemas import parameters_for
from apiflow.tools.workspace import Workspace

_FUNCTIONS: dict[str, Callable[..., str]] = {f.__name__: f for f in TOOL_FUNCTIONS}
# Tools whose arguments end up stored in the workspace (charged to ``WORKSPACE_CHARS``).
_STORING = frozenset({"write", "edit", "execute"})


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

    def __init__(
        self, workspace: Workspace, send: Send, *, snapshot_calls: bool = False, shown: ShownMemo | None = None
    ) -> None:
        self.workspace = workspace
        self._context = ToolContext(workspace=workspace, send=send, shown=shown)
        self.calls: list[tuple[Any, Any]] = []
        """``(name, arguments)`` of every call, in order, as handed in. With the setup (workspace
        seeds, world, world seed) these are everything the workspace and the world depend on: the
        tools read no clock, no global random and never change the arguments they are given
        (tests/fuzz/test_evidence_fuzz.py), which is what lets a trial's grade be looked up
        (apiflow.agent.grades)."""
        self.snapshots: list[bytes | None] | None = [] if snapshot_calls else None
        """With ``snapshot_calls``: the exact encoding (``apiflow.exact``) of each ``(name, arguments)``,
        taken when the call runs, so nothing done to the arguments afterwards changes what a grade is
        keyed by; None for a call holding a value with no exact encoding."""

    def call(self, name: str, arguments: dict[str, Any] | str, scanned: Scan | None = None) -> ToolResult:
        """Run one tool call and return its result in the published shape.

        Args:
            name: Tool name (read, write, edit, search, execute, clarify, report_blocked).
            arguments: The arguments object, or its JSON encoding. Anything else the model sent
                (a list, a number, a value JSON cannot carry) is a ``parsing`` error.
            scanned: The bounds scan an edge already made of ``arguments`` (the agent's turn
                intake). Taken only when it is of this very object and repaired nothing: then it
                is exactly the scan this call would make, and the walk is not done twice.
        """
        self.calls.append((name, arguments))
        if self.snapshots is not None:
            self.snapshots.append(exact_bytes((name, arguments)))
        function = _FUNCTIONS.get(name) if type(name) is str or isinstance(name, str) else None
        if function is None:
            return ToolResult.failed("parsing", f"Tool {preview(name, 200)} not found")
        try:
            reuse = scanned is not None and scanned.value is arguments and not scanned.repaired
            if reuse and scanned is not None:
                checked = scanned
            else:  # an arguments object (the usual) is its own decoding
                checked = scan(arguments if type(arguments) is dict else decode_arguments(arguments))
            decoded = checked.value
            quick = _quick_check(name)
            if quick is None or not quick.admits(decoded):
                validate_arguments(decoded, _parameters(name))
        except ArgumentError as exc:
            return ToolResult.failed("parsing", exc.message)
        except NotJson as exc:
            return ToolResult.failed("parsing", f"The tool call arguments are not JSON: {exc}")
        except LimitError as exc:
            return ToolResult.failed("unknown", exc.message, limit=exc.limit)
        try:
            if name in _STORING:
                self.workspace.charge_stored(checked.chars)
            content = function(self._context, **decoded)
        except LimitError as exc:
            return ToolResult.failed("unknown", exc.message, limit=exc.limit)
        except ToolError as exc:
            return ToolResult.failed("unknown", exc.message)
        if len(content) > TOOL_RESULT_CHARS:
            detail = f"The result of this call has {len(content):,} characters"
            message = f"{detail} (limit tool_result_chars = {TOOL_RESULT_CHARS:,}); read or search for less."
            return ToolResult.failed("unknown", message, limit="tool_result_chars")
        terminated = name if name in TERMINATING_TOOLS else None
        return ToolResult.ok(content, terminated)  # type: ignore[arg-type]
