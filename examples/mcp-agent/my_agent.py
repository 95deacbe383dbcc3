"""A minimal external agent: the shape of one, for ``apiflow run --model external/mine``.

    apiflow run --model external/mine --task sample-w01-sub01 --out out/ \
        --param 'command=["python","examples/mcp-agent/my_agent.py"]'

apiflow starts this process for each trial with ``APIFLOW_MCP_URL`` in its environment (and nothing of
the harness's keys unless the grid names them: ``pass_env``). The trial is an MCP server there: its
``task`` prompt is the task, its tools are the seven of the contract plus ``finish``. This agent reads
the task, looks up what the workspace already holds, and finishes with an honest "I could not do it":
replace ``decide`` with your model. It needs only the ``mcp`` package.
"""

from __future__ import annotations

import asyncio
import json
import os

from mcp import Client


def decide(task: str, seen: str) -> str:
    """Your agent's brain goes here: return the final answer (the prompt says which card to put in it)."""
    return "I could not complete this task."


async def main() -> None:
    async with Client(os.environ["APIFLOW_MCP_URL"]) as client:
        task = (await client.get_prompt("task")).messages[0].content.text
        tools = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("search", {"query": ""})  # what the workspace holds at the start
        seen = json.dumps([part.text for part in found.content if getattr(part, "text", None)])
        print(f"task: {task[:80]}... tools: {', '.join(tools)}", flush=True)
        await client.call_tool("finish", {"answer": decide(task, seen)})


if __name__ == "__main__":
    asyncio.run(main())
