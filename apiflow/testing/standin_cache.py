"""The stand-in's Anthropic prompt cache: billed the way Anthropic documents prompt caching.

A request's prompt is read in cache order (tools, then system, then each message's content blocks).
Only a block marked ``cache_control`` ends a cacheable prefix. At each mark the cache is looked up
for the longest prefix an earlier request wrote, checking the mark's block and up to
``LOOKBACK_BLOCKS`` - 1 blocks before it; that prefix is a cache read. The prefix up to the last mark,
past what was read, is a cache write, when it is at least the model's minimum cacheable length
(shorter prefixes are not cached at all). Everything after the last mark is input. Entries live
``TTL_S`` seconds from their last use. So a request that marks only the system prompt reads the
system prompt and pays every turn as input, while rolling marks on the latest turns read nearly the
whole conversation: what live Claude bills, which an estimate of caching's worth must be tested on.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Final

LOOKBACK_BLOCKS: Final = 20
"""Blocks checked for an earlier write at and before each mark (Anthropic's documented window)."""

TTL_S: Final = 300.0
"""The default (5-minute) cache lifetime, refreshed by every read."""

CHARS_PER_TOKEN: Final = 4


def min_cacheable_tokens(model: str) -> int:
    """Anthropic's minimum cacheable prompt length: 2,048 tokens for the Haiku models, 1,024 for the rest."""
    return 2048 if "haiku" in model else 1024


@dataclass(frozen=True)
class PromptBill:
    """One request's prompt tokens by how Anthropic bills them."""

    input: int
    cache_write: int
    cache_read: int


class PromptCache:
    """Prefixes written by earlier requests, per model; thread-safe."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._entries: dict[tuple[str, bytes], float] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def bill(self, body: dict[str, Any]) -> PromptBill:
        """Look up, write and bill the prompt of one Messages API request."""
        model = str(body.get("model"))
        blocks = prompt_blocks(body)
        tokens, digests, marks = [], [], []
        running, total = hashlib.sha256(model.encode()), 0
        for block in blocks:
            text = json.dumps(_unmarked(block), sort_keys=True)
            running.update(text.encode())
            total += max(1, len(text) // CHARS_PER_TOKEN)
            tokens.append(total)
            digests.append(running.copy().digest())
            marks.append(is_marked(block))
        now = self._clock()
        with self._lock:
            self._expire(now)
            read_at = -1
            for mark in (i for i, marked in enumerate(marks) if marked):
                for i in range(mark, max(mark - LOOKBACK_BLOCKS, -1), -1):
                    if (model, digests[i]) in self._entries:
                        read_at = max(read_at, i)
                        break
            if read_at >= 0:
                self._entries[(model, digests[read_at])] = now
            read = tokens[read_at] if read_at >= 0 else 0
            last = max((i for i, marked in enumerate(marks) if marked), default=-1)
            write = 0
            if last > read_at and tokens[last] >= min_cacheable_tokens(model):
                write = tokens[last] - read
                for i in range(last + 1):
                    if marks[i] and tokens[i] >= min_cacheable_tokens(model):
                        self._entries[(model, digests[i])] = now
        return PromptBill(input=total - read - write, cache_write=write, cache_read=read)

    def _expire(self, now: float) -> None:
        for key in [k for k, used in self._entries.items() if now - used > TTL_S]:
            del self._entries[key]


def is_marked(block: dict[str, Any]) -> bool:
    """True when the block, or a block inside it (a tool result's content), carries ``cache_control``."""
    inner = block.get("content")
    return "cache_control" in block or (
        isinstance(inner, list) and any(isinstance(b, dict) and is_marked(b) for b in inner)
    )


def _unmarked(value: Any) -> Any:
    """The block as the cache sees it: marks dropped, string content read as one text block (the
    API's shorthand for it)."""
    if isinstance(value, dict):
        if isinstance(value.get("content"), str) and value.get("type") == "tool_result":
            value = {**value, "content": [{"type": "text", "text": value["content"]}]}
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def prompt_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's prompt as blocks in cache order: tools, system, then each message's blocks (a
    message's string content is one text block; each block is tagged with its message's role)."""
    blocks: list[dict[str, Any]] = [dict(t) for t in body.get("tools") or () if isinstance(t, dict)]
    system = body.get("system")
    if isinstance(system, str):
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks += [dict(b) for b in system if isinstance(b, dict)]
    for message in body.get("messages") or ():
        content = message.get("content")
        items = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        blocks += [{**b, "role": message.get("role")} for b in items if isinstance(b, dict)]
    return blocks
