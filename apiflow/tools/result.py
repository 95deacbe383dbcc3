"""What a tool call returns, and the two ways a call can fail.

The published transcripts keep a failed call's text out of ``content``: the tool message
carries ``content: ""`` and ``error: {"type": "parsing"|"unknown", "message": ...}``
(REFERENCE §1, §8). ``parsing`` means the arguments never reached the tool (bad JSON,
schema violation, unknown tool); ``unknown`` means the tool ran and refused.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

ErrorType = Literal["parsing", "unknown"]
Termination = Literal["clarify", "report_blocked"]


class ToolError(Exception):
    """The tool refused the call; the message goes back to the model verbatim."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ArgumentError(Exception):
    """The arguments could not be parsed or failed the tool's JSON schema."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolResult(NamedTuple):
    """The outcome of one tool call (a NamedTuple: immutable and cheap to build, once per call).

    Attributes:
        content: The result string (``""`` when ``error`` is set).
        error: ``{"type": ..., "message": ...}`` for a failed call, else ``None``.
        terminated: ``"clarify"``/``"report_blocked"`` when the call ends the trial.
        parse_error: True when the arguments never reached the tool (``error.type == "parsing"``);
            the agent loop counts these as malformed tool calls.
        limit: The bound that refused the call (``apiflow.tools.limits.TOOL_BOUNDS``), else ``None``.
    """

    content: str
    error: dict[str, str] | None = None
    terminated: Termination | None = None
    parse_error: bool = False
    limit: str | None = None

    @classmethod
    def ok(cls, content: str, terminated: Termination | None = None) -> ToolResult:
        """A successful call."""
        return cls(content=content, terminated=terminated)

    @classmethod
    def failed(cls, error_type: ErrorType, message: str, limit: str | None = None) -> ToolResult:
        """A failed call in the published ``{type, message}`` shape with empty content."""
        return cls(
            content="",
            error={"type": error_type, "message": message},
            parse_error=error_type == "parsing",
            limit=limit,
        )
