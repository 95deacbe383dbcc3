"""Prompt caching as the published runs had it: rolling cache breakpoints for the Claude routes.

Anthropic caches a prompt prefix only where a request marks one (``cache_control``), at most four
marks a request. The published runs (Inspect AI) marked the system prompt, the last tool and the last
two user turns, and read most of every Claude prompt from the cache; a request with no mark pays the
whole prompt as input on every call of a trial. OpenAI-style providers cache on their own and need no
mark. The marks go on the copy of the conversation sent to the provider, never on the trial's
transcript: caching changes what a call costs, not what the trial is or records (so it is a transport
setting, outside the trial id; ``prompt_caching: false`` in a model's params turns it off).

A mark's lifetime is five minutes unless a model's params ask ``cache_ttl``: ``1h`` marks every
breakpoint for an hour, ``1h-prefix`` only the tools and system prompt (what a task's trials share;
the rolling turns are read again within seconds, where an hour's write, 2x input against 1.25x,
buys nothing). Anthropic requires longer marks before shorter ones; both orders keep that.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final

from apiflow.errors import UsageError

EPHEMERAL: Final = {"type": "ephemeral"}
"""A five-minute mark, as sent when no ``cache_ttl`` is asked (the request bytes of a default run)."""

HOUR: Final = {"type": "ephemeral", "ttl": "1h"}

CACHE_TTLS: Final = ("5m", "1h", "1h-prefix")
"""What ``params.cache_ttl`` may ask: every mark five minutes (the default), an hour, or an hour on the
shared prefix only."""

ROLLING_TURNS: Final = 2
"""User or tool turns marked from the end: with the system prompt and the last tool, four marks, the
most Anthropic accepts in one request."""


def marks_breakpoints(model: str) -> bool:
    """True for the routes that cache only at marked breakpoints: Anthropic's own and Claude on
    Bedrock and Vertex AI."""
    route, _, name = model.partition("/")
    if route == "anthropic":
        return True
    return route in ("bedrock", "vertex_ai") and ("claude" in name or "anthropic." in name)


def caches_prompt(model: str, params: Mapping[str, Any]) -> bool:
    """Whether a route's prompt is cached under a model's params: a breakpoint route unless
    ``prompt_caching: false`` turns its marks off; every other route caches on its own."""
    return not (marks_breakpoints(model) and params.get("prompt_caching") is False)


def limit_counts_cache_reads(model: str) -> bool:
    """Whether the provider's token rate limit counts tokens read from the prompt cache. Anthropic's
    input-token limits count uncached input and cache writes, not cache reads; OpenAI-style providers
    count the whole prompt. A gate that charged Claude its cache reads would throttle a cached run
    many times over."""
    return not marks_breakpoints(model)


def cache_ttl(params: Mapping[str, Any]) -> str:
    """The mark lifetime a model's params ask (``cache_ttl``, default ``5m``).

    Raises:
        UsageError: A value other than ``CACHE_TTLS``.
    """
    ttl = params.get("cache_ttl", "5m")
    if ttl not in CACHE_TTLS:
        raise UsageError(f"params.cache_ttl must be one of {', '.join(CACHE_TTLS)}, got {ttl!r}")
    return str(ttl)


def with_breakpoints(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], ttl: str = "5m"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Copies of ``messages`` (OpenAI chat shape) and ``tools`` with the rolling marks set: the system
    prompt, the last tool, and the last ``ROLLING_TURNS`` user or tool messages, each for ``ttl``
    (``cache_ttl``).

    Every system, user and tool message goes as text blocks, marked or not, so a turn is sent in the
    same form before and after the mark moves past it: the prefix an earlier call cached is the
    prefix this call sends. What is changed is copied; nothing given is edited (the client reuses its
    converted messages call after call).
    """
    prefix = HOUR if ttl in ("1h", "1h-prefix") else EPHEMERAL
    rolling = HOUR if ttl == "1h" else EPHEMERAL
    marked = [_as_blocks(m) if m.get("role") in ("system", "user", "tool") else m for m in messages]
    for index, message in enumerate(marked):
        if message.get("role") == "system":
            marked[index] = _marked(message, prefix)
            break
    turns = [i for i, m in enumerate(marked) if m.get("role") in ("user", "tool")]
    for index in turns[-ROLLING_TURNS:]:
        marked[index] = _marked(marked[index], rolling)
    tools = list(tools)
    if tools:
        tools[-1] = {**tools[-1], "cache_control": prefix}
    return marked, tools


def _as_blocks(message: dict[str, Any]) -> dict[str, Any]:
    """The message with non-empty string content as one text block (the API's own reading of it)."""
    content = message.get("content")
    if isinstance(content, str) and content:
        return {**message, "content": [{"type": "text", "text": content}]}
    return message


def _marked(message: dict[str, Any], mark: Mapping[str, str]) -> dict[str, Any]:
    """The message with ``mark`` on its last content block."""
    content = message.get("content")
    if not (isinstance(content, list) and content and isinstance(content[-1], dict)):
        return message  # nothing a mark can sit on (an empty turn): left as it is, unmarked
    return {**message, "content": [*content[:-1], {**content[-1], "cache_control": mark}]}


def prompt_cache_key(messages: list[dict[str, Any]]) -> str:
    """A key naming a conversation's stable prefix: its opening system and user messages (a task's
    trials share them; it names no trial, model or seed)."""
    opening = [m.get("content") for m in messages[:2]]
    return "apiflow-" + hashlib.sha256(json.dumps(opening, sort_keys=True, default=str).encode()).hexdigest()[:24]
