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

A mark that asks ``"ttl": "1h"`` keeps its entry ``TTL_1H_S``; the tokens written up to the last such
mark are one-hour writes (billed 2x input, not 1.25x), the rest five-minute ones, as Anthropic splits
``cache_creation`` in its usage.
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

TTL_1H_S: Final = 3600.0
"""The lifetime a mark asks with ``"ttl": "1h"``, refreshed by every read."""

CHARS_PER_TOKEN: Final = 4


def min_cacheable_tokens(model: str) -> int:
    """Anthropic's minimum cacheable prompt length: 2,048 tokens for the Haiku models, 1,024 for the rest."""
    return 2048 if "haiku" in model else 1024


@dataclass(frozen=True)
class PromptBill:
    """One request's prompt tokens by how Anthropic bills them (``cache_write_1h``: the part of
    ``cache_write`` written for an hour)."""

    input: int
    cache_write: int
    cache_read: int
    cache_write_1h: int = 0


class PromptCache:
    """Prefixes written by earlier requests, per model; thread-safe."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._entries: dict[tuple[str, bytes], tuple[float, float]] = {}
        """(model, prefix digest) -> (when it expires, its lifetime)."""
        self._lock = threading.Lock()
        self._clock = clock

    def bill(self, body: dict[str, Any]) -> PromptBill:
        """Look up, write and bill the prompt of one Messages API request."""
        model = str(body.get("model"))
        blocks = prompt_blocks(body)
        tokens, digests, marks, ttls = [], [], [], []
        running, total = hashlib.sha256(model.encode()), 0
        for block in blocks:
            text = json.dumps(_unmarked(block), sort_keys=True)
            running.update(text.encode())
            total += max(1, len(text) // CHARS_PER_TOKEN)
            tokens.append(total)
            digests.append(running.copy().digest())
            marks.append(is_marked(block))
            ttls.append(mark_ttl_s(block))
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
                key = (model, digests[read_at])
                self._entries[key] = (now + self._entries[key][1], self._entries[key][1])
            read = tokens[read_at] if read_at >= 0 else 0
            last = max((i for i, marked in enumerate(marks) if marked), default=-1)
            write = hour = 0
            if last > read_at and tokens[last] >= min_cacheable_tokens(model):
                write = tokens[last] - read
                hours = [i for i in range(read_at + 1, last + 1) if marks[i] and ttls[i] == TTL_1H_S]
                hour = tokens[hours[-1]] - read if hours else 0
                for i in range(last + 1):
                    if marks[i] and tokens[i] >= min_cacheable_tokens(model):
                        self._write((model, digests[i]), now, ttls[i])
        return PromptBill(input=total - read - write, cache_write=write, cache_read=read, cache_write_1h=hour)

    def _write(self, key: tuple[str, bytes], now: float, ttl: float) -> None:
        held = self._entries.get(key)
        if held is None or now + ttl > held[0]:  # a shorter mark does not cut an hour's entry short
            self._entries[key] = (now + ttl, ttl)

    def _expire(self, now: float) -> None:
        for key in [k for k, (expires, _) in self._entries.items() if now > expires]:
            del self._entries[key]


def mark_ttl_s(block: dict[str, Any]) -> float:
    """The lifetime the block's mark (or a mark inside it) asks: an hour for ``"ttl": "1h"``."""
    marks = [block.get("cache_control")]
    inner = block.get("content")
    if isinstance(inner, list):
        marks += [b.get("cache_control") for b in inner if isinstance(b, dict)]
    return TTL_1H_S if any(isinstance(m, dict) and m.get("ttl") == "1h" for m in marks) else TTL_S


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
