"""Offline models: ``apiflow/oracle`` and ``apiflow/blank``, plus the script player they share.

They are ordinary ``ModelClient``s with no provider behind them (no litellm, no keys), so a whole
grid runs offline and the harness can be benchmarked without model latency. A script is a list of
turns decided up front; what is read back from the conversation is what a trial mints: the
response ref each ``execute`` returned (golden calls name them as ``{{ref:N}}``, the N-th execute
of the golden solution, 0-based), and the per-trial form of each bank value the responses showed
(``apiflow.world.canaries``), which replaces the bank literal wherever the script names it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from apiflow.bank.task import GoldenCall, Task
from apiflow.models.base import GenerateConfig, ModelOutput, ToolCall, Usage
from apiflow.models.reading import (
    PREVIEW_MARKS,
    SCOPE_MARK,
    CanaryReader,
    canary_reader,
    cut_ref,
)
from apiflow.tools.schemas import offered_schemas, offered_schemas_chars
from apiflow.world.canaries import CANARY_SHAPE, SALTED, SEPARATOR
from apiflow.world.memo import IdentityMemo

_MARK, _ESCAPED_MARK = PREVIEW_MARKS
_REF_RE = re.compile(r"\{\{ref:(\d+)\}\}")
MISSING_REF = "request:req-000000/response:resp-00000000"
"""Stands in for a ref whose execute never ran (a skipped step): the tools then answer "not found"."""

_CHARS_PER_TOKEN = 4


class _CallInfo(NamedTuple):
    """What a script needs of a bank call, derived once per call object (``_call_memo``)."""

    has_refs: bool
    """The arguments hold a ``{{ref:N}}``."""
    size: int
    """Approximate JSON size of name + arguments (the token meter's)."""
    dumped: str | None
    """The arguments' JSON as ``CanaryReader.apply`` writes it; None for string arguments."""
    literals: frozenset[str]
    """The bank canary literals the arguments name."""


# Offline models replay the same bank objects in every trial; deriving their scripts and
# what each call needs once per object keeps the offline model far below the harness's own cost.
_call_memo: IdentityMemo[GoldenCall, _CallInfo] = IdentityMemo()
_script_memo: IdentityMemo[Task, tuple[list[Turn], frozenset[str]]] = IdentityMemo()


def _call_info(call: GoldenCall) -> _CallInfo:
    text = json.dumps(call.arguments)
    raw = None if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)
    literals = frozenset(m.group(0) for m in CANARY_SHAPE.finditer(text))
    return _CallInfo("{{ref:" in text, len(text) + len(call.name), raw, literals)


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


def literals_of(turn: Turn) -> frozenset[str]:
    """Bank canary literals a turn names (asked only while a cut preview is unread)."""
    found = [_call_memo.get(p.call, _call_info).literals for p in turn.calls]
    if turn.text:
        found.append(frozenset(m.group(0) for m in CANARY_SHAPE.finditer(json.dumps(turn.text))))
    return frozenset().union(*found)


def script_literals(turns: list[Turn]) -> frozenset[str]:
    """Every bank canary literal a script names."""
    return frozenset().union(*(literals_of(t) for t in turns))


def resolve_refs(value: Any, refs: dict[int, str]) -> Any:
    """Replace ``{{ref:N}}`` in every string inside ``value`` by the N-th execute's response ref."""
    return _resolve_sized(value, refs)[0]


def _resolve_sized(value: Any, refs: dict[int, str]) -> tuple[Any, int]:
    """``resolve_refs`` plus the value's approximate JSON length, in one walk (the hot path of
    offline models: a ``json.dumps`` per call just to count characters costs more than this)."""
    if isinstance(value, str):
        if "{{ref:" in value:
            value = _REF_RE.sub(lambda m: refs.get(int(m.group(1)), MISSING_REF), value)
        return value, len(value) + 2
    if isinstance(value, dict):
        out, size = {}, 2
        for key, item in value.items():
            out[key], item_size = _resolve_sized(item, refs)
            size += len(key) + item_size + 4
        return out, size
    if isinstance(value, list):
        items, size = [], 2
        for item in value:
            resolved, item_size = _resolve_sized(item, refs)
            items.append(resolved)
            size += item_size + 2
        return items, size
    return value, 5


def card_text(card: dict[str, Any], preamble: str = "Done: the work is complete.") -> str:
    """Final assistant text carrying ``card`` in a ```json block."""
    return f"{preamble}\n\n```json\n{json.dumps(card, indent=2, ensure_ascii=False)}\n```"


def golden_turns(task: Task) -> list[Turn]:
    """The task's golden solution as turns, ending with the expected card (shared, read-only)."""
    return _script_memo.get(task, _golden_script)[0]


def golden_literals(task: Task) -> frozenset[str]:
    """``script_literals(golden_turns(task))``, derived once per task with the script."""
    return _script_memo.get(task, _golden_script)[1]


def _golden_script(task: Task) -> tuple[list[Turn], frozenset[str]]:
    turns = _golden_turns(task)
    return turns, script_literals(turns)


def _golden_turns(task: Task) -> list[Turn]:
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


_RESPONSE_REF_RE = re.compile(r'^\{"response_ref": "([^"]+)"')


@dataclass(slots=True)
class _TokenMeter:
    """Plausible usage from message sizes: the already-seen prefix counts as a cache read.

    New input per call = the messages added since the previous call; their sizes are the
    strings the harness added (system, user, tool results) plus our own previous output.
    ``ScriptedModel._collect_refs`` sums those sizes as it reads the new messages: each string
    content + 8, each assistant turn the model's previous output.
    """

    seen_messages: int = 0
    seen_tokens: int = 0
    last_output_chars: int = 0

    def charge(
        self, new_chars: int, message_count: int, tools: list[dict[str, Any]], output_chars: int
    ) -> Usage:
        """Usage of a call whose ``message_count`` messages added ``new_chars`` since the last call."""
        if not self.seen_messages:
            new_chars += offered_schemas_chars() if tools is offered_schemas() else len(json.dumps(tools))
        new_tokens = new_chars // _CHARS_PER_TOKEN
        cached = self.seen_tokens
        self.seen_messages, self.seen_tokens = message_count, cached + new_tokens
        self.last_output_chars = output_chars
        output = output_chars // _CHARS_PER_TOKEN
        return Usage(new_tokens, output if output > 1 else 1, cached)


@dataclass(slots=True)
class ScriptedModel:
    """Plays a fixed list of turns, resolving ``{{ref:N}}`` from the responses of its own executes.

    Attributes:
        model_api: Recorded as the trial's ``model_api``.
        turns: The script; after its last turn the model keeps answering with empty text.
        literals: ``script_literals(turns)`` when the caller has it (a task's golden script: derived
            once per task); None: worked out on first need.
    """

    model_api: str
    turns: list[Turn]
    literals: frozenset[str] | None = None
    _turn: int = 0
    _scan_from: int = 0
    _pending: dict[str, int] = field(default_factory=dict)
    _refs: dict[int, str] = field(default_factory=dict)
    _meter: _TokenMeter = field(default_factory=_TokenMeter)
    _learned: dict[str, str] = field(default_factory=dict)
    _reader: CanaryReader | None = None
    _cut: list[str] = field(default_factory=list)
    _reads: int = 0
    _salting: bool = False
    _needles: list[tuple[str, str]] | None = None

    def _collect_refs(self, messages: list[dict[str, Any]]) -> int:
        """Read the response refs of executes answered since the last turn, and the per-trial
        form of every bank canary the tool results showed (``apiflow.world.canaries``): the
        script names the bank's literal, the agent must send what *this* trial's API said."""
        new_literal = False
        # The token meter's sizes are summed in the same pass (one walk of the new messages, not two).
        new_chars, last_output = 0, self._meter.last_output_chars
        for message in messages[self._scan_from :]:
            content = message["content"]
            role = message["role"]
            if role == "assistant":
                new_chars += last_output
                continue
            if type(content) is not str and not isinstance(content, str):
                continue
            new_chars += len(content) + 8
            if role != "tool":
                continue
            if SEPARATOR in content and self._learn(content):
                new_literal = True
            self._salting = self._salting or SCOPE_MARK in content
            if (_MARK in content or _ESCAPED_MARK in content) and (cut := cut_ref(content)) is not None:
                self._cut.append(cut)
            index = self._pending.pop(message.get("tool_call_id", ""), None) if self._pending else None
            if index is None:
                continue
            # execute results start with the ref: a regex is enough, no need to parse the body.
            match = _RESPONSE_REF_RE.match(content)
            if match:
                self._refs[index] = match[1]
        self._scan_from = len(messages)
        if new_literal:
            self._reader = canary_reader(self._learned)
        return new_chars

    def _learn(self, content: str) -> bool:
        """Pick up the per-trial form of each literal the script names (a substring test, no regex
        scan); a later response's form replaces an earlier one (a replayed form gives way to this
        trial's). True when a literal was learned for the first time (the reader then changes)."""
        needles = self._needles
        if needles is None:
            found = self.literals if self.literals is not None else script_literals(self.turns)
            needles = self._needles = [(v, v + SEPARATOR) for v in found]
        learned, new = self._learned, False
        for literal, needle in needles:
            if needle in content:  # the operator, not find: most needles are absent from a result
                match = SALTED.match(content, content.find(needle))
                if match is not None and match[1] == literal:
                    new = new or literal not in learned
                    learned[literal] = match[0]
        return new

    def replay_from(self, refs: dict[int, str], values: dict[str, str]) -> None:
        """Start from what another trial showed: its response refs (by golden execute index) and
        its per-trial forms of bank values. For the replay adversaries: a transcript's values."""
        self._refs.update(refs)
        self._learned.update(values)
        if self._learned:
            self._reader = canary_reader(self._learned)

    def learned_values(self) -> dict[str, str]:
        """The per-trial forms this trial's responses showed, by bank literal."""
        return dict(self._learned)

    def _tool_call(self, turn_no: int, i: int, planned: PlannedCall) -> tuple[ToolCall, int]:
        call_id = f"call-{turn_no:03d}-{i}"
        has_refs, size, dumped, _ = _call_memo.get(planned.call, _call_info)
        arguments: dict[str, Any] | str = planned.call.arguments
        if has_refs:
            arguments, size = _resolve_sized(arguments, self._refs)
            size += len(planned.call.name)
        # Without refs the bank's own argument object is passed on as is: nothing downstream
        # mutates tool-call arguments (the workspace copies what it stores), so its JSON text,
        # which the reader searches for learned literals, is the memoised one.
        if self._reader is not None:
            if has_refs or dumped is None:
                arguments = self._reader.apply(arguments)
            else:
                arguments = self._reader.apply_dumped(arguments, dumped)
        if planned.malformed:
            # Broken JSON, as a model that loses track of its quoting emits it.
            arguments = json.dumps(arguments)[:-1]
        elif planned.ref_index is not None:
            self._pending[call_id] = planned.ref_index
        return ToolCall(call_id, planned.call.name, arguments), size

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        """Return the next scripted turn."""
        new_chars = self._collect_refs(messages)
        turn_no = self._turn
        try:
            turn = self.turns[turn_no]
        except IndexError:  # past the script's end: empty replies
            turn = _EMPTY_TURN
        # Read cut responses only in a trial whose world salts (its responses say so): elsewhere
        # (gate runs, hand-built sessions) the script needs nothing it has not been shown.
        if self._cut and self._salting and self._unseen_literals(turn_no, turn):
            return self._read_cut(messages, tools, new_chars)
        self._turn += 1
        text = turn.text
        out_chars = len(text) if text else 0
        calls = []
        for i, planned in enumerate(turn.calls):
            call, size = self._tool_call(turn_no, i, planned)
            calls.append(call)
            out_chars += size
        # _collect_refs has just set _scan_from to len(messages): the count the meter wants.
        usage = self._meter.charge(new_chars, self._scan_from, tools, out_chars)
        if text and self._reader is not None:
            text = self._reader.apply(text)
        return ModelOutput(text, None, tuple(calls), usage)

    def _unseen_literals(self, turn_no: int, turn: Turn) -> bool:
        """Whether the turn names a bank literal whose per-trial form this trial has not shown."""
        return any(n not in self._learned for n in literals_of(turn))

    def _read_cut(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], new_chars: int
    ) -> ModelOutput:
        """A turn of ``read`` calls for every response seen only through a cut preview.

        The script is about to name a bank value this trial has not shown yet; like an agent that
        needs a value beyond a preview, it reads the whole responses first (once each).
        """
        calls = []
        for ref in self._cut:
            calls.append(ToolCall(f"read-{self._reads:03d}", "read", {"entity_ref": ref}))
            self._reads += 1
        chars = sum(len(ref) + 30 for ref in self._cut)
        self._cut = []
        usage = self._meter.charge(new_chars, len(messages), tools, chars)
        return ModelOutput(text="", tool_calls=tuple(calls), usage=usage)


_EMPTY_TURN = Turn()


def oracle_model(task: Task) -> ScriptedModel:
    """``apiflow/oracle``: plays the golden solution, then reports the expected card."""
    return ScriptedModel("apiflow/oracle", golden_turns(task), golden_literals(task))


def blank_model() -> ScriptedModel:
    """``apiflow/blank``: one empty reply, no tool calls (an empty-message model, REFERENCE §6)."""
    return ScriptedModel("apiflow/blank", [Turn()])
