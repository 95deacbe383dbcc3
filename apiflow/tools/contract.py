"""The seven tools: read, write, edit, search, execute, clarify, report_blocked.

Each tool is a typed function over a ``ToolContext``; its docstring is the description the
model sees and its signature is the source of its JSON schema (``apiflow.tools.schemas``).
Result and error strings follow the published transcripts (REFERENCE §2.3–§2.4) because
models adapt to them; a tool refuses a call by raising ``ToolError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiflow.tools.execute import Send, ShownMemo, execute_request
from apiflow.tools.limits import loads_bounded
from apiflow.tools.pretty import indented
from apiflow.tools.refs import parse_entity_ref
from apiflow.tools.result import ToolError
from apiflow.tools.search import search_workspace
from apiflow.tools.workspace import DEFAULT_WRITE_SCOPE, Workspace
from apiflow.world.jsontext import dumps

# An object, or the same object JSON-encoded as a string (both encodings are common).
JsonObjectArg = dict[str, Any] | str

WRITE_CONTENT_NOT_OBJECT = (
    "write(...): `content` must be a JSON object, not a string. Pass it as an object, "
    'e.g. {"value": ...} for a variable or {"method": ..., "url": ...} for a request.'
)
EDIT_PATCH_NOT_OBJECT = "edit(...): `patch` must be a JSON object of keys to set, not a string."
REQUEST_NOT_OBJECT = "`request` must be an object holding the request content."
EXACTLY_ONE_TARGET = "Provide exactly one of `target` (entity ref) or `request` (inline content)."
READ_ONLY_KINDS = ("response", "spec")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What the tools work on: the trial's workspace and the world's transport."""

    workspace: Workspace
    send: Send
    shown: ShownMemo | None = None


def _as_object(value: Any, message: str) -> dict[str, Any]:
    """A dict argument, decoding a JSON-encoded object; anything else is refused with ``message``."""
    if isinstance(value, str):
        try:
            value = loads_bounded(value)
        except ValueError:
            raise ToolError(message) from None
    if not isinstance(value, dict):
        raise ToolError(message)
    return value


def read(ctx: ToolContext, entity_ref: JsonObjectArg, scope: str | None = None) -> str:
    """Fetch one entity's full content (a response's whole body, the spec, a variable's value).

    Args:
        entity_ref: Typed reference {"kind", "id", "parent"?}; kind is request, response, variable,
            spec or handle. A response needs its parent request, e.g.
            {"kind": "response", "id": "resp-…", "parent": {"kind": "request", "id": "req-…"}},
            or the ref string "request:req-…/response:resp-…".
        scope: For variables only: vault, local or global. Omitted: search vault, then local, then global.
    """
    ref = parse_entity_ref(entity_ref)
    if ref.kind == "variable":
        found = ctx.workspace.read_variable(ref.id, scope)
        return dumps({"scope": found.scope, "name": found.name, "value": found.value})
    entity = ctx.workspace.get_entity(ref)
    return indented({"ref": str(entity.ref), "content": entity.content, "updated_at": entity.updated_at})


def write(
    ctx: ToolContext, entity_ref: JsonObjectArg, content: JsonObjectArg, scope: str | None = None
) -> str:
    """Create or replace an entity: a variable, a named request, or a handle.

    Args:
        entity_ref: Typed reference {"kind", "id"} of the entity to write.
        content: A JSON object. Variable: {"value": <any JSON>}. Request: {"protocol": "rest",
            "method", "url", "headers"?, "body"?}. Handle: any object.
        scope: For variables: vault, local or global (default local).
    """
    ref = parse_entity_ref(entity_ref)
    body = _as_object(content, WRITE_CONTENT_NOT_OBJECT)
    if ref.kind == "variable":
        if "value" not in body:
            raise ToolError("write(variable, ...): content must include `value`.")
        target_scope = scope or DEFAULT_WRITE_SCOPE
        ctx.workspace.write_variable(target_scope, ref.id, body["value"])
        return f"variable {target_scope}:{ref.id} written"
    if ref.kind in READ_ONLY_KINDS:
        # Ours: a written response would be forged evidence for grading.
        raise ToolError(
            f"write({ref.kind}, ...): `{ref.kind}` entities are read-only; they come from the API."
        )
    ctx.workspace.put_entity(ref, body, "write")
    return f"entity {ref} written"


def edit(ctx: ToolContext, entity_ref: JsonObjectArg, patch: JsonObjectArg) -> str:
    """Change part of a request or handle entity (shallow merge of the patch's keys).

    Args:
        entity_ref: Typed reference {"kind", "id"} of an existing request or handle.
        patch: A JSON object of top-level keys to set, e.g. {"body": {...}} or {"headers": {...}}.
    """
    ref = parse_entity_ref(entity_ref)
    if ref.kind == "variable":
        raise ToolError("edit on `variable` is not supported — use `write` to replace.")
    changes = _as_object(patch, EDIT_PATCH_NOT_OBJECT)
    entity = ctx.workspace.find_entity(ref)
    if entity is None:
        raise ToolError(f"Cannot edit non-existent entity {ref}. Use `write` first.")
    if ref.kind in READ_ONLY_KINDS:
        raise ToolError(f"edit on `{ref.kind}` is not supported — `{ref.kind}` entities are read-only.")
    ctx.workspace.put_entity(ref, {**entity.content, **changes}, "write")
    return f"entity {ref} edited; keys set: {list(changes)}"


def search(ctx: ToolContext, query: str, kind: str | None = None) -> str:
    """Find entities AND variables in the workspace whose id or content contains the query.

    Args:
        query: Case-insensitive substring, matched as one whole string; "" lists everything.
        kind: Only this kind (request, response, variable, spec, handle); omitted or "" for all.
    """
    return dumps(search_workspace(ctx.workspace, query, kind))


def execute(
    ctx: ToolContext,
    request: JsonObjectArg | None = None,
    target: JsonObjectArg | None = None,
    mode: str | None = None,
) -> str:
    """Send an API request: inline via `request` (preferred), or a written request entity via `target`.

    Args:
        request: Request content. REST: {"protocol": "rest", "method", "url", "headers"?, "body"?};
            a JSON body is an object, a string body is sent raw (e.g. form-urlencoded).
            GraphQL: {"protocol": "graphql", "query", "variables"?, "operationName"?, "headers"?}.
            MCP: {"protocol": "mcp", "tool", "arguments"?}.
        target: Typed reference {"kind": "request", "id"} of a request written earlier.
        mode: Accepted for compatibility; it does not change anything.
    """
    del mode  # published: free text with no visible effect
    if (request is None) == (target is None):
        raise ToolError(EXACTLY_ONE_TARGET)
    if request is not None:
        content = request if type(request) is dict else _as_object(request, REQUEST_NOT_OBJECT)
        return execute_request(ctx.workspace, ctx.send, content, None, ctx.shown)
    ref = parse_entity_ref(target)
    if ref.kind != "request":
        raise ToolError(f"execute() target must be a request entity, got kind={ref.kind!r}.")
    entity = ctx.workspace.find_entity(ref)
    if entity is None:
        raise ToolError(f"Request {ref} not in workspace; create it with `write` first.")
    return execute_request(ctx.workspace, ctx.send, entity.content, ref, ctx.shown)


def clarify(ctx: ToolContext, question: str) -> str:
    """Abstain: ask the user a question. This ends the trial.

    Args:
        question: What you need to know to proceed.
    """
    return f"trial terminated (clarify): {question}"


def report_blocked(ctx: ToolContext, reason: str) -> str:
    """Abstain: declare you cannot proceed. This ends the trial.

    Args:
        reason: Why the task cannot be completed.
    """
    return f"trial terminated (report_blocked): {reason}"


# Order = the order tools are offered to the model (and of the system prompt's list).
TOOL_FUNCTIONS = (read, write, edit, search, execute, clarify, report_blocked)
TERMINATING_TOOLS = frozenset({"clarify", "report_blocked"})
