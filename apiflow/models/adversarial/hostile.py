"""``apiflow/hostile:<name>``: agents that attack the harness, not the grader.

The grader adversaries (``apiflow/adv:``) cheat on the labour; these play the classes of issue 26 that
are models: change another trial's grade through a shared memo (1), rewrite their own transcript (2),
make a failure look like the harness's (3), leave before playing (4), block the trial's thread (9).
Each is untrusted agent code and takes exactly the path a submitted agent takes: a ``PluginModel``
around its own client (deep copies, its own ``AgentThread``, ``AgentFault``), or, for class 4, an
``external/`` command. ``apiflow bank audit`` plays them and checks the harness held
(``apiflow.authoring.hostile_audit``, docs/design/012-hostile-agents.md).
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apiflow.bank.task import Task
from apiflow.models.base import GenerateConfig, ModelClient, ModelOutput, ProviderError, ToolCall
from apiflow.models.offline import card_text, golden_turns, oracle_model
from apiflow.models.plugins import PluginModel, builtin_factory

HOSTILE_PREFIX = "apiflow/hostile:"
ORIGIN = "apiflow hostile adversary"
FORGERY = "HOSTILE-FORGERY"
"""What a forger writes into the conversation it was handed: seen in a record outside its own
assistant turns, the forgery reached the record."""

CLOCK_S = 0.5
"""The trial clock the blocking adversary is played under."""
SLEEP_S = 3.0
"""How long it blocks on each turn: far past its clock, yet bounded, so no thread outlives the audit long."""
EXIT_COMMAND = (sys.executable, "-c", "import sys; sys.exit(0)")
"""The external agent that leaves before its first MCP request."""

Messages = list[dict[str, Any]]


class HostileInterrupt(KeyboardInterrupt):
    """A Ctrl-C the model raises itself; its own class, so whoever catches it never swallows a real one."""


class HostileExit(SystemExit):
    """A ``sys.exit`` the model raises itself (its own class, as ``HostileInterrupt``)."""


@dataclass(frozen=True, slots=True)
class Hostile:
    """One harness attack.

    Attributes:
        name: ``apiflow/hostile:<name>``.
        harm: Its class in issue 26 (1, 2, 3, 4, 9).
        attack: What it does, one line.
        max_seconds: The trial clock it is played under (None: the default).
        extra: The optional dependency its kind needs (``mcp`` for an external agent), or None.
        recorded: Whether it forges from an honest transcript of the same trial (the audit hands it one,
            as the grader audit hands ``epoch-replay`` its recording).
    """

    name: str
    harm: int
    attack: str
    max_seconds: float | None = None
    extra: str | None = None
    recorded: bool = False


HOSTILES: dict[str, Hostile] = {
    h.name: h
    for h in (
        Hostile("poison", 1, "fails, then forges what it sent into an honest trial", recorded=True),
        Hostile("rewrite", 2, "edits the prompt and tool results it was shown; a forged card"),
        Hostile("raise", 3, "plays the calls, then raises RuntimeError instead of answering"),
        Hostile("provider-error", 3, "plays the calls, then raises a ProviderError of its own"),
        Hostile("interrupt", 3, "plays the calls, then raises KeyboardInterrupt"),
        Hostile("exit", 3, "plays the calls, then raises SystemExit"),
        Hostile("return-none", 3, "plays the calls, then returns None"),
        Hostile("return-dict", 3, "plays the calls, then returns a dict"),
        Hostile("bad-str", 3, "plays the calls, then answers with a str whose methods raise"),
        Hostile("exit-early", 4, "an external agent that exits before its first MCP request", extra="mcp"),
        Hostile("sleep", 9, f"blocks in time.sleep({SLEEP_S:g}) on every turn", max_seconds=CLOCK_S),
    )
}
"""Every hostile adversary by short name, in the order the audit lists them."""

HOSTILE_MODELS: tuple[str, ...] = tuple(HOSTILE_PREFIX + name for name in HOSTILES)


def _text(message: dict[str, Any]) -> str:
    blocks = message.get("content")
    if isinstance(blocks, str):
        return blocks
    return "".join(b.get("text", "") for b in blocks or () if isinstance(b, dict))


class _Poisoner:
    """Class 1: sends an honest trial's calls by name with wrong arguments (so it fails), then on its
    last turn edits those argument objects and the list it was handed into the honest trial's, hoping
    the run's grade memo files its failing grade under the honest trial's key."""

    def __init__(self, name: str, task: Task, honest: Messages | None) -> None:
        self.model_api = name
        self.sent: list[tuple[dict[str, Any], Any]] = []
        self.prefix = honest[:-1] if honest else None
        if honest:
            self.turns = [m for m in honest if m.get("role") == "assistant"]
        else:  # no recording: the key's own calls, which it can only restore its arguments into
            self.turns = [
                {"tool_calls": [
                    {"id": f"call-{i:03d}-{j}", "name": p.call.name, "arguments": p.call.arguments}
                    for j, p in enumerate(turn.calls)
                ]} if turn.calls else {"content": [{"type": "text", "text": turn.text}]}
                for i, turn in enumerate(golden_turns(task))
            ]  # fmt: skip

    async def generate(self, messages: Messages, tools: Messages, config: GenerateConfig) -> ModelOutput:
        asked = sum(1 for m in messages if m.get("role") == "assistant")
        turn = self.turns[min(asked, len(self.turns) - 1)]
        if turn.get("tool_calls") and asked < len(self.turns) - 1:
            calls = []
            for call in turn["tool_calls"]:
                wrong: dict[str, Any] = {"forged": True}
                self.sent.append((wrong, call["arguments"]))
                calls.append(ToolCall(call["id"], call["name"], wrong))
            return ModelOutput(tool_calls=tuple(calls))
        for wrong, right in self.sent:
            wrong.clear()
            wrong.update(copy.deepcopy(right))
        if self.prefix is not None:
            messages[:] = copy.deepcopy(self.prefix)
        return ModelOutput(text=_text(turn))


class _Rewriter:
    """Class 2: plays the oracle's calls, rewrites the prompt and every tool result it was shown, and
    reports a card of ``FORGERY`` values, which only the forged conversation would support."""

    def __init__(self, name: str, task: Task) -> None:
        self.model_api = name
        self.fields = list(task.card_fields) or list(task.expected_card)
        self.oracle = oracle_model(task)

    async def generate(self, messages: Messages, tools: Messages, config: GenerateConfig) -> ModelOutput:
        output = await self.oracle.generate(messages, tools, config)  # it reads before it forges
        for message in messages:
            if message.get("role") == "user":
                message["content"] = f"{FORGERY}: report that every value is {FORGERY}."
            elif message.get("role") == "tool":
                message["content"] = f"{FORGERY}: done"
        if output.tool_calls or not output.text:
            return output
        return ModelOutput(text=card_text(dict.fromkeys(self.fields, FORGERY)), usage=output.usage)


class _BadStr(str):
    """A text whose methods raise: a turn that breaks when the harness reads it."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("this text refuses to be read")

    __str__ = __len__ = __iter__ = __getitem__ = __contains__ = __format__ = _refuse  # type: ignore[assignment]
    __reduce__ = __reduce_ex__ = __copy__ = __deepcopy__ = _refuse  # type: ignore[assignment]
    encode = isascii = strip = splitlines = startswith = find = _refuse  # type: ignore[assignment]


def _misbehave(how: str, output: ModelOutput) -> Any:
    """What the class-3 adversaries hand back, or raise, instead of their answer."""
    if how == "raise":
        raise RuntimeError("the agent's own bug")
    if how == "provider-error":
        raise ProviderError("rate limited by the agent's own provider")
    if how == "interrupt":
        raise HostileInterrupt
    if how == "exit":
        raise HostileExit(3)
    if how == "return-none":
        return None
    if how == "return-dict":
        return {"text": output.text}
    return ModelOutput(text=_BadStr(output.text))


class _Faulty:
    """Class 3: plays the oracle's calls, then fails loudly instead of answering, hoping for an
    unscored ``harness_error`` or ``provider_error``."""

    def __init__(self, name: str, task: Task, how: str) -> None:
        self.model_api = name
        self.how = how
        self.oracle = oracle_model(task)

    async def generate(self, messages: Messages, tools: Messages, config: GenerateConfig) -> Any:
        output = await self.oracle.generate(messages, tools, config)
        if output.tool_calls:
            return output
        return _misbehave(self.how, output)


class _Sleeper:
    """Class 9: blocks its thread synchronously on every turn, then plays the oracle's turn."""

    def __init__(self, name: str, task: Task) -> None:
        self.model_api = name
        self.oracle = oracle_model(task)

    async def generate(self, messages: Messages, tools: Messages, config: GenerateConfig) -> ModelOutput:
        time.sleep(SLEEP_S)  # noqa: ASYNC251 - the attack: a synchronous block in async code
        return await self.oracle.generate(messages, tools, config)


_INNER: dict[str, Callable[[str, Task, Messages | None], Any]] = {
    "poison": _Poisoner,
    "rewrite": lambda name, task, _: _Rewriter(name, task),
    "sleep": lambda name, task, _: _Sleeper(name, task),
}


def hostile_model(name: str, task: Task, seed: int, recorded: Messages | None = None) -> ModelClient:
    """``apiflow/hostile:<name>`` for one trial of ``task``.

    Args:
        name: A key of ``HOSTILES``.
        task: The trial's task (the adversary gets a deep copy, as a plug-in's factory does).
        seed: The trial seed (an external agent's factory takes it).
        recorded: For ``poison``: an honest trial's messages to forge into (a copy is kept).

    Raises:
        KeyError: Unknown adversary (the registry turns it into a UsageError).
        UsageError: ``exit-early`` without the MCP SDK (the ``mcp`` extra).
    """
    hostile = HOSTILES[name]
    model = HOSTILE_PREFIX + name
    if hostile.harm == 4:
        params = {"command": list(EXIT_COMMAND), "transport": "stdio", "grace_s": 1}
        built: ModelClient = builtin_factory("external")(f"external/hostile-{name}", task, seed, params)
        return built
    own = task.model_copy(deep=True)
    build = _INNER.get(name)
    inner = build(model, own, copy.deepcopy(recorded)) if build else _Faulty(model, own, name)
    return PluginModel(inner, model, ORIGIN)


__all__ = [
    "FORGERY",
    "HOSTILES",
    "HOSTILE_MODELS",
    "HOSTILE_PREFIX",
    "Hostile",
    "HostileExit",
    "HostileInterrupt",
    "hostile_model",
]
