"""A small scripted external agent: what ``external/<label>`` runs in the tests (and an example).

    python tests/mcp/scripted_agent.py MODE [--bank BANK] [--stdio] [--env-out FILE]

It reaches its trial at ``$APIFLOW_MCP_URL`` (streamable HTTP) or, with ``--stdio``, on its own
stdin/stdout, with the SDK's own ``mcp.Client``. Modes:

- ``golden``: plays the task's golden solution (apiflow's oracle as its brain, through
  ``apiflow.mcp.agent.play``) and finishes with the expected card. It finds its task the only
  way an agent can, through the session: the bank task whose prompt is the ``task`` prompt;
- ``blank``: reads the task and leaves without finishing (an agent that says nothing);
- ``crash``: makes one tool call, then exits with code 3;
- ``hang``: lists the tools and never finishes;
- ``noconnect``: exits with code 2 before connecting;
- ``env``: writes its environment as a JSON object to the file ``--env-out`` names, then plays
  like ``golden``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from mcp import Client
from mcp.server.stdio import stdio_server

from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.bank.task import Task
from apiflow.mcp.agent import play
from apiflow.models.offline import oracle_model


async def find_task(client: Any, bank: Bank) -> Task:
    """The bank task this session serves, known by its ``task`` prompt (no id reaches the agent)."""
    prompt = (await client.get_prompt("task")).messages[0].content.text
    return next(t for t in bank.tasks.values() if initial_messages(t)[1]["content"] == prompt)


async def run(mode: str, bank: str, stdio: bool, env_out: str) -> int:
    if mode == "noconnect":
        return 2
    if mode == "env":
        with open(env_out, "w", encoding="utf-8") as out:
            json.dump(dict(os.environ), out)
    server: Any = stdio_server() if stdio else os.environ["APIFLOW_MCP_URL"]
    async with Client(server) as client:
        if mode in ("golden", "env"):
            await play(client, oracle_model(await find_task(client, load_bank(bank))))
        elif mode == "blank":
            await client.get_prompt("task")
        elif mode == "crash":
            await client.call_tool("search", {"query": ""})
            os._exit(3)  # no goodbye: the process just dies
        elif mode == "hang":
            await client.list_tools()
            await asyncio.sleep(3600)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("golden", "blank", "crash", "hang", "noconnect", "env"))
    parser.add_argument("--bank", default=str(DEFAULT_BANK))
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--env-out", default="")
    args = parser.parse_args()
    return asyncio.run(run(args.mode, args.bank, args.stdio, args.env_out))


if __name__ == "__main__":
    sys.exit(main())
