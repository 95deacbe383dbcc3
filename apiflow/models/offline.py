"""Offline models: ``apiflow/oracle`` and ``apiflow/blank``, plus the script player they share.

They are ordinary ``ModelClient``s with no provider behind them (no litellm, no keys), so a whole
grid runs offline and the harness can be benchmarked without model latency. A script is a list of
turns decided up front; the only thing read back from the conversation is the response ref each
``execute`` returned, because refs are minted per trial and golden calls name them as
``{{ref:N}}`` (the N-th execute of the golden solution, 0-based).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from apiflow.bank.task import GoldenCall, Task
from apiflow.models.base import GenerateConfig, ModelOutput, ToolCall, Usage

_REF_RE = re.compile(r"\{\{ref:(\d+)\}\}")
MISSING_REF = "request:req-000000/response:resp-00000000"
"""Stands in for a ref whose execute never ran (a skipped step): the tools then answer "not found"."""

_CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One call of a scripted turn.

    Attributes:
        call: The golden (or decoy) call; its string arguments may hold ``{{ref:N}}``.
        ref_index: For an ``execute``: the golden execute index whose ref this call's response
            provides (None when it provides none).
        malformed: Send the arguments as broken JSON text instead of an object.
    """

    call: GoldenCall
    ref_index: int | None = None
    malformed: bool = False


@dataclass(frozen=True, slots=True)
class Turn:
    """One scripted assistant turn: parallel calls, or (with no calls) the final text."""

    calls: tuple[PlannedCall, ...] = ()
    text: str = ""


def resolve_refs(value: Any, refs: dict[int, str]) -> Any:
    """Replace ``{{ref:N}}`` in every string inside ``value`` by the N-th execute's response ref."""
    if isinstance(value, str):
        if "{{ref:" not in value:
            return value
        return _REF_RE.sub(lambda m: refs.get(int(m.group(1)), MISSING_REF), value)
    if isinstance(value, dict):
        return {k: resolve_refs(v, refs) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(v, refs) for v in value]
    return value


def card_text(card: dict[str, Any], preamble: str = "Done: the work is complete.") -> str:
    """Final assistant text carrying ``card`` in a ```json block."""
    return f"{preamble}\n\n```json\n{json.dumps(card, indent=2, ensure_ascii=False)}\n```"


def golden_turns(task: Task) -> list[Turn]:
    """The task's golden solution as turns, ending with the expected card."""
    turns: list[Turn] = []
    next_ref = 0
    for step in task.golden:
        calls = []
        for call in step.calls:
            ref_index = None
            if call.name == "execute":
                ref_index, next_ref = next_ref, next_ref + 1
            calls.append(PlannedCall(call, ref_index))
        turns.append(Turn(tuple(calls)))
    turns.append(Turn(text=card_text(task.expected_card)))
    return turns


def _message_chars(message: dict[str, Any]) -> int:
    content = message.get("content")
    size = len(content) if isinstance(content, str) else sum(len(str(b)) for b in content or ())
    for call in message.get("tool_calls") or ():
        args = call["arguments"]
        size += len(call["name"]) + (len(args) if isinstance(args, str) else len(json.dumps(args)))
    return size + 8


@dataclass(slots=True)
class _TokenMeter:
    """Plausible usage from message sizes: the already-seen prefix counts as a cache read."""

    seen_messages: int = 0
    seen_tokens: int = 0
    tools_tokens: int | None = None

    def usage(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], output_chars: int) -> Usage:
        if self.tools_tokens is None:
            self.tools_tokens = len(json.dumps(tools)) // _CHARS_PER_TOKEN
        new_chars = sum(_message_chars(m) for m in messages[self.seen_messages :])
        new_tokens = new_chars // _CHARS_PER_TOKEN + (self.tools_tokens if self.seen_messages == 0 else 0)
        cached = self.seen_tokens
        self.seen_messages, self.seen_tokens = len(messages), cached + new_tokens
        return Usage(input=new_tokens, output=max(1, output_chars // _CHARS_PER_TOKEN), cache_read=cached)


@dataclass(slots=True)
class ScriptedModel:
    """Plays a fixed list of turns, resolving ``{{ref:N}}`` from the responses of its own executes.

    Attributes:
        model_api: Recorded as the trial's ``model_api``.
        turns: The script; after its last turn the model keeps answering with empty text.
    """

    model_api: str
    turns: list[Turn]
    _turn: int = 0
    _scan_from: int = 0
    _pending: dict[str, int] = field(default_factory=dict)
    _refs: dict[int, str] = field(default_factory=dict)
    _meter: _TokenMeter = field(default_factory=_TokenMeter)

    def _collect_refs(self, messages: list[dict[str, Any]]) -> None:
        """Read the response refs of executes answered since the last turn."""
        for message in messages[self._scan_from :]:
            if message["role"] != "tool" or message.get("tool_call_id") not in self._pending:
                continue
            index = self._pending.pop(message["tool_call_id"])
            try:
                ref = json.loads(message["content"]).get("response_ref")
            except (ValueError, AttributeError):
                ref = None
            if isinstance(ref, str):
                self._refs[index] = ref
        self._scan_from = len(messages)

    def _tool_call(self, turn_no: int, i: int, planned: PlannedCall) -> ToolCall:
        call_id = f"call-{turn_no:03d}-{i}"
        arguments: dict[str, Any] | str = resolve_refs(planned.call.arguments, self._refs)
        if planned.malformed:
            # Broken JSON, as a model that loses track of its quoting emits it.
            arguments = json.dumps(arguments)[:-1]
        elif planned.ref_index is not None:
            self._pending[call_id] = planned.ref_index
        return ToolCall(call_id, planned.call.name, arguments)

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        """Return the next scripted turn."""
        self._collect_refs(messages)
        turn_no = self._turn
        self._turn += 1
        turn = self.turns[turn_no] if turn_no < len(self.turns) else Turn()
        calls = tuple(self._tool_call(turn_no, i, p) for i, p in enumerate(turn.calls))
        out_chars = len(turn.text) + sum(
            len(c.arguments) if isinstance(c.arguments, str) else len(json.dumps(c.arguments)) for c in calls
        )
        usage = self._meter.usage(messages, tools, out_chars)
        return ModelOutput(text=turn.text, tool_calls=calls, usage=usage)


def oracle_model(task: Task) -> ScriptedModel:
    """``apiflow/oracle``: plays the golden solution, then reports the expected card."""
    return ScriptedModel("apiflow/oracle", golden_turns(task))


def blank_model() -> ScriptedModel:
    """``apiflow/blank``: one empty reply, no tool calls (an empty-message model, REFERENCE §6)."""
    return ScriptedModel("apiflow/blank", [Turn()])
