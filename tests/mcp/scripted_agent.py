"""A small scripted external agent: what ``external/<label>`` runs in the tests (and an example).

    python tests/mcp/scripted_agent.py MODE [--bank BANK] [--stdio]

It reaches its trial at ``$APIFLOW_MCP_URL`` (streamable HTTP) or, with ``--stdio``, on its own
stdin/stdout, with the SDK's own ``mcp.Client``. Modes:

- ``golden``: plays the task's golden solution (``$APIFLOW_TASK_ID``; apiflow's oracle as its
  brain, through ``apiflow.mcp.agent.play``) and finishes with the expected card;
- ``blank``: reads the task and leaves without finishing (an agent that says nothing);
- ``crash``: makes one tool call, then exits with code 3;
- ``hang``: lists the tools and never finishes;
- ``noconnect``: exits with code 2 before connecting.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from mcp import Client
from mcp.server.stdio import stdio_server

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.mcp.agent import play
from apiflow.models.offline import oracle_model


async def run(mode: str, bank: str, stdio: bool) -> int:
    if mode == "noconnect":
        return 2
    server: Any = stdio_server() if stdio else os.environ["APIFLOW_MCP_URL"]
    async with Client(server) as client:
        if mode == "golden":
            task = load_bank(bank).task(os.environ["APIFLOW_TASK_ID"])
            await play(client, oracle_model(task))
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
    parser.add_argument("mode", choices=("golden", "blank", "crash", "hang", "noconnect"))
    parser.add_argument("--bank", default=str(DEFAULT_BANK))
    parser.add_argument("--stdio", action="store_true")
    args = parser.parse_args()
    return asyncio.run(run(args.mode, args.bank, args.stdio))


if __name__ == "__main__":
    sys.exit(main())
