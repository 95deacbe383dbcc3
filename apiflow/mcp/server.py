"""The MCP face of one trial: the seven tools, a ``finish`` tool, the task as a prompt.

Built on the official SDK's low-level ``Server`` (imported here only: ``import apiflow`` never
loads ``mcp``). Every ``tools/call`` goes to the trial's ``AgentBridge``, so tools, schemas,
results and errors are those of an in-process trial:

- ``tools/list``: the seven tools with exactly the parameters of ``apiflow.tools.tool_schemas()``
  (same order), then ``finish``;
- a result is the tool message's ``content`` as one text block; a failed call is ``isError``
  with the error's message as its text and the published ``{type, message}`` error in
  ``_meta["apiflow/error"]``;
- the server's ``instructions`` are the trial's system prompt, the prompt ``task`` its user message.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from apiflow.mcp.bridge import TRIAL_OVER, AgentBridge, ToolReply
from apiflow.mcp.meta import MetaError, parse_meta
from apiflow.tools import tool_schemas

SERVER_NAME = "apiflow-trial"
FINISH = "finish"
TASK_PROMPT = "task"
ERROR_META = "apiflow/error"

FINISH_TOOL = types.Tool(
    name=FINISH,
    description=(
        "End the trial with your final answer: the text you would send the user, with the answer "
        "card as a ```json block. Over MCP this stands for replying without a tool call."
    ),
    input_schema={
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "Your final message to the user."}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)


def mcp_tools() -> list[types.Tool]:
    """The tools an MCP agent is offered: the seven (as in-process) and ``finish``."""
    tools = [
        types.Tool(
            name=s["function"]["name"],
            description=s["function"]["description"],
            input_schema=s["function"]["parameters"],
        )
        for s in tool_schemas()
    ]
    return [*tools, FINISH_TOOL]


def call_result(reply: ToolReply) -> types.CallToolResult:
    """A tool message as an MCP result (the error's text in the content, its dict in ``_meta``)."""
    if reply.error is None:
        return types.CallToolResult(content=[types.TextContent(type="text", text=reply.content)])
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=reply.error["message"])],
        is_error=True,
        _meta={ERROR_META: reply.error},
    )


def build_server(bridge: AgentBridge) -> Server[Any]:
    """An MCP server whose tool calls drive ``bridge`` (one server per trial)."""
    system, user = bridge.initial_messages[0]["content"], bridge.initial_messages[1]["content"]
    tools = mcp_tools()

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        bridge.touch()
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        bridge.touch()
        try:
            meta = parse_meta(params.meta)
        except MetaError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        arguments = params.arguments or {}
        if params.name == FINISH:
            answer = arguments.get("answer")
            if not isinstance(answer, str) or set(arguments) != {"answer"}:
                return call_result(
                    ToolReply("", {"type": "parsing", "message": "finish wants one string `answer`"})
                )
            done = bridge.finish(answer, meta)
            return call_result(
                ToolReply(
                    "trial finished" if done else "",
                    None if done else {"type": "unknown", "message": TRIAL_OVER},
                )
            )
        try:
            reply = await bridge.call(params.name, arguments, meta)
        except ValueError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        return call_result(reply)

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        bridge.touch()
        return types.ListPromptsResult(
            prompts=[types.Prompt(name=TASK_PROMPT, description="The trial's task (its user message).")]
        )

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        bridge.touch()
        if params.name != TASK_PROMPT:
            raise MCPError(
                types.INVALID_PARAMS, f"unknown prompt {params.name!r}; the one prompt is {TASK_PROMPT!r}"
            )
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=user))
        return types.GetPromptResult(description="The trial's task.", messages=[message])

    return Server(
        SERVER_NAME,
        instructions=system,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
