"""``AgentBridge``: an agent that drives the trial from outside, seen by the loop as a ``ModelClient``.

Control is inverted. An MCP agent calls the tools; the trial's loop asks a model for turns. The
bridge joins the two: each incoming tool call waits in the bridge's inbox, ``generate()`` hands
the next turn's calls to the loop as a ``ModelOutput``, and when the loop comes back for the
following turn the tool messages it appended answer the waiting calls. ``run_trial``'s own
setup, limits, intake bounds, canaries, grading and record writing therefore apply unchanged:
the record of an MCP trial is an in-process record by construction (docs/design/081-mcp.md).

What a call may say about its turn travels in its ``_meta`` (all keys optional, see
``apiflow.mcp.meta``): several calls sharing a turn id form one assistant turn with parallel
calls, run in their ``index`` order; a turn may carry the assistant's text, reasoning and token
usage. The ``finish`` call (the final assistant text) or the session closing ends the trial.

Pure asyncio: nothing here imports the MCP SDK (``apiflow.mcp.server`` does).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from apiflow.mcp.meta import TurnMeta
from apiflow.models.base import GenerateConfig, ModelOutput, ToolCall

TRIAL_OVER = "Not run: the trial is over."
"""The error a call gets when it arrives after the trial ended (or was never run by it)."""


class ToolReply(NamedTuple):
    """What a call's tool message said: its content, and the error dict of a failed call."""

    content: str
    error: dict[str, str] | None = None


@dataclass(slots=True)
class _Call:
    """One ``tools/call`` waiting in the inbox for its turn, then for its result."""

    name: str
    arguments: dict[str, Any]
    meta: TurnMeta
    reply: asyncio.Future[ToolReply]
    call_id: str = ""


@dataclass(frozen=True, slots=True)
class _Finish:
    """The agent's final assistant turn (``finish``): its text, reasoning and usage."""

    meta: TurnMeta
    answer: str


class _Closed:
    """The agent's session ended: no more turns will come."""


_CLOSED = _Closed()


@dataclass(slots=True)
class AgentBridge:
    """The ``ModelClient`` side of an external agent; the MCP server feeds it calls.

    Attributes:
        model_api: Recorded as the trial's ``model_api`` (``external/<label>``, or ``external/mcp``).
        initial_messages: The system and user messages the trial starts with (what the MCP server
            offers as instructions and the ``task`` prompt); the loop must begin with the same.
    """

    model_api: str
    initial_messages: list[dict[str, str]]
    _inbox: deque[_Call | _Finish | _Closed] = field(default_factory=deque)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _waiting: dict[str, _Call] = field(default_factory=dict)
    _used_ids: set[str] = field(default_factory=set)
    _scan_from: int = 0
    _started: bool = False
    _over: bool = False
    contacted: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by the agent's first MCP request (``touch``): it connected."""

    # -- the MCP side ---------------------------------------------------------------------------

    def touch(self) -> None:
        """Any MCP request from the agent: it has connected."""
        self.contacted.set()

    async def call(self, name: str, arguments: dict[str, Any], meta: TurnMeta) -> ToolReply:
        """Queue one tool call for its turn and wait for the result the trial's tools gave."""
        if self._over:
            return ToolReply("", {"type": "unknown", "message": TRIAL_OVER})
        call = _Call(name, arguments, meta, asyncio.get_running_loop().create_future())
        if meta.call_id is not None:
            if meta.call_id in self._used_ids:
                raise ValueError(f"call id {meta.call_id!r} was already used in this trial")
            self._used_ids.add(meta.call_id)
        self._push(call)
        return await call.reply

    def finish(self, answer: str, meta: TurnMeta) -> bool:
        """Queue the final assistant turn; False when the trial was already over."""
        if self._over:
            return False
        self._push(_Finish(meta, answer))
        return True

    def session_closed(self) -> None:
        """The agent's session ended (stdio EOF, process exit): the next turn is an empty one."""
        self._push(_CLOSED)

    def _push(self, item: _Call | _Finish | _Closed) -> None:
        self._inbox.append(item)
        self._arrived.set()

    # -- the trial side (ModelClient) -----------------------------------------------------------

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        """Answer the previous turn's calls from ``messages``, then return the agent's next turn."""
        if not self._started:
            self._started = True
            if messages[:2] != self.initial_messages:
                raise RuntimeError("the trial's first messages are not the ones the MCP agent was shown")
        self._answer_from(messages)
        first = await self._next()
        if isinstance(first, _Closed):
            self._inbox.appendleft(first)  # every later turn is empty too
            return ModelOutput()
        if isinstance(first, _Finish):
            m = first.meta
            return ModelOutput(text=first.answer, reasoning=m.reasoning, usage=m.usage)
        calls = await self._turn_of(first)
        meta = next((c.meta for c in calls if c.meta.declares_turn), calls[0].meta)
        for call in calls:
            call.call_id = call.meta.call_id or self._fresh_id()
            self._waiting[call.call_id] = call
        tool_calls = tuple(ToolCall(c.call_id, c.name, c.arguments) for c in calls)
        return ModelOutput(text=meta.text, reasoning=meta.reasoning, tool_calls=tool_calls, usage=meta.usage)

    async def end_trial(self, messages: list[dict[str, Any]]) -> None:
        """The loop stopped: answer every call it ran from ``messages``, refuse the rest.

        ``run_trial`` calls this after the loop whatever ended it (an abstention's result, a
        limit, the time budget), so no agent call is left waiting on a trial that is over.
        """
        self._over = True
        self._answer_from(messages)
        over = ToolReply("", {"type": "unknown", "message": TRIAL_OVER})
        for call in self._waiting.values():
            _settle(call.reply, over)
        self._waiting.clear()
        while self._inbox:
            item = self._inbox.popleft()
            if isinstance(item, _Call):
                _settle(item.reply, over)

    def _answer_from(self, messages: list[dict[str, Any]]) -> None:
        """Settle each waiting call whose tool message the loop has appended since the last scan."""
        for message in messages[self._scan_from :]:
            if message.get("role") != "tool":
                continue
            call = self._waiting.pop(message.get("tool_call_id", ""), None)
            if call is not None:
                _settle(call.reply, ToolReply(message["content"], message.get("error")))
        self._scan_from = len(messages)
        # The loop runs every call of a turn before it asks again; one it left out was refused.
        for call in self._waiting.values():
            _settle(call.reply, ToolReply("", {"type": "unknown", "message": TRIAL_OVER}))
        self._waiting.clear()

    async def _next(self) -> _Call | _Finish | _Closed:
        while not self._inbox:
            self._arrived.clear()
            await self._arrived.wait()
        return self._inbox.popleft()

    async def _turn_of(self, first: _Call) -> list[_Call]:
        """``first`` and the other calls of its turn, in index order.

        A call that belongs to no turn, or to another one, waits for a later turn; a finish or
        a closed session before the turn is complete ends it with the calls that came.
        """
        if first.meta.turn_id is None or first.meta.turn_size <= 1:
            return [first]
        calls: list[_Call] = [first]
        later: list[_Call | _Finish | _Closed] = []
        while len(calls) < first.meta.turn_size:
            item = await self._next()
            if isinstance(item, _Call) and item.meta.turn_id == first.meta.turn_id:
                calls.append(item)
            elif isinstance(item, _Call):
                later.append(item)
            else:
                later.append(item)
                break
        self._inbox.extendleft(reversed(later))
        return sorted(calls, key=lambda c: c.meta.turn_index)

    def _fresh_id(self) -> str:
        n = len(self._used_ids)
        while f"mcp-{n:04d}" in self._used_ids:
            n += 1
        self._used_ids.add(f"mcp-{n:04d}")
        return f"mcp-{n:04d}"


def _settle(future: asyncio.Future[ToolReply], reply: ToolReply) -> None:
    if not future.done():
        future.set_result(reply)
