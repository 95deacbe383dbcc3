"""Playing a conversation on the offline model: the stand-in's replies come from here.

The provider is stateless, so each request rebuilds the offline model for the conversation's task
and replays every earlier assistant turn: retries and concurrent trials of one task get consistent
answers. The reasoning it shows is a function of the reply and the turn, so records replay exactly.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, cast

from apiflow.bank import Task
from apiflow.models.base import GenerateConfig, ModelOutput
from apiflow.models.registry import make_model


def play(
    tasks: dict[str, Task],
    plays: tuple[tuple[str, str], ...],
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
) -> ModelOutput:
    """The offline model's next reply to ``messages``; ``tasks`` are the bank's by user message and
    ``plays`` maps provider model names to offline ones (``StandinConfig.plays``). LookupError for a
    conversation about no task of the bank."""
    user = next((m["content"] for m in messages if m["role"] == "user"), None)
    task = tasks.get(user or "")
    if task is None:
        raise LookupError("the stand-in only knows conversations about its bank's tasks")
    model = dict(plays).get(model, model)
    seed = int(hashlib.sha256(f"{model}|{task.id}".encode()).hexdigest()[:12], 16)
    config = GenerateConfig()
    # Stateless: replay every earlier assistant turn so the scripted model is where the conversation is.
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]

    async def replay() -> ModelOutput:
        player = make_model(model, task, seed)
        for index in turns:
            await player.generate(messages[:index], tools, config)
        return await player.generate(messages, tools, config)

    return drive(replay)


def drive(make: Callable[[], Coroutine[Any, Any, ModelOutput]]) -> ModelOutput:
    """Run an offline model's coroutine to its end here, without an event loop.

    Offline models compute and never wait (a bare ``await asyncio.sleep(0)`` yields None and is
    stepped over), so a request costs no new event loop (``asyncio.run`` was most of the
    stand-in's CPU per request) and the server's own loop can call it. One that waits on a real
    future is played again from the start by ``asyncio.run`` in a thread of its own.
    """
    coro = make()
    try:
        while coro.send(None) is None:
            pass
    except StopIteration as done:
        return cast(ModelOutput, done.value)
    coro.close()
    result: list[ModelOutput] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(make()))
        except BaseException as exc:  # re-raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def thought(output: ModelOutput, turn: int) -> str:
    """The reasoning the stand-in shows for one turn: deterministic, so records replay exactly."""
    if output.tool_calls:
        names = ", ".join(call.name for call in output.tool_calls)
        return f"Turn {turn}: the next step needs {names}; checking what the last results showed."
    return f"Turn {turn}: the results so far answer the task; writing the answer card."
