"""A trial's world and seven tools for any MCP-capable agent (docs/design/081-mcp.md).

``AgentBridge`` (pure asyncio) turns an external agent's tool calls into a ``ModelClient`` the
trial loop drives; ``apiflow.mcp.server`` puts it behind the official MCP SDK. The SDK is imported
only by the modules that serve or connect, never by ``import apiflow`` or ``import apiflow.mcp``.
"""

from apiflow.mcp.bridge import AgentBridge, ToolReply
from apiflow.mcp.meta import MetaError, TurnMeta, parse_meta, turn_meta

__all__ = ["AgentBridge", "MetaError", "ToolReply", "TurnMeta", "parse_meta", "turn_meta"]
