"""``play``: any ``ModelClient`` as an MCP agent, through the SDK's own client.

The agent side of ``apiflow.mcp``, for scripted external agents and tests: it reads the trial's
instructions and ``task`` prompt, keeps its own copy of the transcript (the messages the trial
records: the same tool message for each result), asks its model for each turn and sends the
turn's calls concurrently with their ``_meta`` (``apiflow.mcp.meta``), so an in-process model
played this way gives the record it gives in process. A final text goes through ``finish``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from apiflow.agent.loop import assistant_message
from apiflow.mcp.bridge import TRIAL_OVER
from apiflow.mcp.meta import turn_meta
from apiflow.models.base import GenerateConfig, ModelClient, ModelOutput, ToolCall

_ABSTAIN = frozenset({"clarify", "report_blocked"})


async def play(client: Any, model: ModelClient, config: GenerateConfig | None = None) -> list[dict[str, Any]]:
    """Play one trial with ``model`` over an entered ``mcp.Client``; return the agent's transcript.

    Ends after the model's final text (sent as ``finish``), an abstention that ran, or a result
    saying the trial is over (a limit). A model's tool-call arguments must be JSON objects: MCP
    carries no other kind.
    """
    config = config or GenerateConfig()
    prompt = await client.get_prompt("task")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": client.instructions or ""},
        {"role": "user", "content": prompt.messages[0].content.text},
    ]
    listed = await client.list_tools()
    tools = [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        }
        for t in listed.tools
        if t.name != "finish"
    ]
    turn = 0
    while True:
        output = await model.generate(messages, tools, config)
        messages.append(assistant_message(output))
        if not output.tool_calls:
            meta = turn_meta(text=output.text, reasoning=output.reasoning, usage=output.usage)
            await client.call_tool("finish", {"answer": output.text}, meta=meta)
            return messages
        results = await asyncio.gather(
            *(_send(client, output, turn, i, call) for i, call in enumerate(output.tool_calls))
        )
        turn += 1
        over = False
        for call, result in zip(output.tool_calls, results, strict=True):
            message = _tool_message(call, result)
            if message.get("error", {}).get("message") == TRIAL_OVER:
                over = True  # not run, so not in the trial's transcript either
                continue
            messages.append(message)
            over = over or (call.name in _ABSTAIN and "error" not in message)
        if over:
            return messages


async def _send(client: Any, output: ModelOutput, turn: int, index: int, call: ToolCall) -> Any:
    if not isinstance(call.arguments, dict):
        raise ValueError(f"tool call {call.id}: MCP carries JSON-object arguments only")
    first = index == 0  # the turn's text, reasoning and usage ride on its first call
    meta = turn_meta(
        turn_id=f"turn-{turn}",
        size=len(output.tool_calls),
        index=index,
        call_id=call.id,
        text=output.text if first else None,
        reasoning=output.reasoning if first else None,
        usage=output.usage if first else None,
    )
    return await client.call_tool(call.name, call.arguments, meta=meta)


def _tool_message(call: ToolCall, result: Any) -> dict[str, Any]:
    """The trial's tool message for one MCP result (``apiflow.mcp.server.call_result`` inverted)."""
    text = result.content[0].text if result.content else ""
    message: dict[str, Any] = {"role": "tool", "content": "", "tool_call_id": call.id, "function": call.name}
    if result.is_error:
        message["error"] = (result.meta or {}).get("apiflow/error") or {"type": "unknown", "message": text}
    else:
        message["content"] = text
    return message
