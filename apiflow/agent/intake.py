"""A model's turn is untrusted input: check and repair it before the loop records or runs it.

Whatever a model (or an adapter passing provider data through) puts in a ``ModelOutput`` must end
as a *model* outcome, never as a harness error, and must leave a record that can be written: a
text that is not a string, a tool name that is a number, an id that repeats, arguments that are
a list or hold NaN, lone surrogates, negative or absurd token counts, thousands of parallel calls.
``TurnIntake.check`` turns one raw turn into a clean one and says what it did: *bounds* hit
(``TURN_BOUNDS``, named in the record's ``apiflow.limits_hit``) and *repairs* made (counted in
``apiflow.input_repairs``). A clean turn is passed through unchanged, so an honest trial's record
keeps its bytes. docs/design/031-untrusted-model-input.md has the why of every value.

A ``ModelOutput`` is required: a client returning anything else is a bug in our adapter, and
stays a harness error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from apiflow.models.base import ModelOutput, ToolCall, Usage
from apiflow.models.provider_fields import TIER_CHARS
from apiflow.tools.limits import ARGUMENT_CHARS, LimitError, NotJson, Scan, preview, scan, writable_text

TURN_TOOL_CALLS: Final = 64
"""Most tool calls of one turn that run (``parallel_calls``).

Models emit a handful in parallel (the published transcripts never show more than ~20); calls
past the 64th are recorded (arguments as a short preview) and each answered with a tool error
naming this bound, so the transcript stays valid for the provider and the model can go on.
"""

TEXT_CHARS: Final = 262_144
"""Most characters kept of one turn's text, and of its reasoning (``text_chars``).

A final answer with its card is a few hundred characters; the rest is cut (with a note saying
so), so that one turn cannot fill the record and the grader's scan of the final text for JSON
objects stays short (it is linear in the text: docs/results/031-untrusted-model-input-measurements.md).
"""

TRANSCRIPT_CHARS: Final = 16_777_216
"""Most characters of model-caused transcript (turns and tool results) in one trial.

Ends the trial as ``limit`` with ``apiflow.limit = "transcript_chars"``. Always on, whatever the
configurable ``TrialLimits`` say (they may all be off), so a record can never grow without end:
the longest oracle transcript of ``bank/v1`` is measured in the design note, far below this.
"""

NAME_CHARS: Final = 256
"""Longest tool name or tool-call id kept (a longer one is cut or replaced: a repair)."""

USAGE_TOKENS: Final = 100_000_000
"""Largest token count accepted for one kind in one call; more, negative or non-integer is repaired.

Far above any context window, so it only ever catches garbage, which would otherwise poison
token limits, cost and every token statistic.
"""

TURN_BOUNDS: Final[dict[str, int]] = {
    "parallel_calls": TURN_TOOL_CALLS,
    "text_chars": TEXT_CHARS,
    "transcript_chars": TRANSCRIPT_CHARS,
}
"""Every bound the loop enforces on a turn, by the name the record uses."""

_EXCESS_PREVIEW = 200
_CUT_NOTE = "\n[apiflow: cut at {limit:,} characters (limit text_chars)]"


@dataclass(slots=True)
class InputLog:
    """What the intake and the tools did about model input over one trial (ordered by first time)."""

    limits: dict[str, int] = field(default_factory=dict)
    repairs: dict[str, int] = field(default_factory=dict)

    def hit(self, name: str) -> None:
        """Count one hit of the bound ``name``."""
        self.limits[name] = self.limits.get(name, 0) + 1

    def repair(self, name: str, count: int = 1) -> None:
        """Count ``count`` repairs of kind ``name``."""
        if count:
            self.repairs[name] = self.repairs.get(name, 0) + count


class CheckedTurn(NamedTuple):
    """One turn after intake (a NamedTuple: built once per model call, without a frozen
    dataclass's ``object.__setattr__`` per field).

    Attributes:
        output: The turn as recorded: strings, bounded, writable.
        run_arguments: For each call, what the toolbox gets: the repaired arguments, or what the
            model sent when a bound or JSON refuses it (the toolbox then words the tool error).
        runnable: How many calls run; the rest are refused by ``parallel_calls``.
        chars: The recorded turn's size, charged to ``TRANSCRIPT_CHARS``.
        dropped: Calls not even recorded because the turn alone outgrew the transcript bound.
        scans: Per call, the bounds scan intake made of an arguments object that needed no
            repair (else None): the toolbox takes it instead of walking the same object again.
    """

    output: ModelOutput
    run_arguments: tuple[Any, ...]
    runnable: int
    chars: int
    dropped: int = 0
    scans: tuple[Scan | None, ...] = ()


class TurnIntake:
    """Checks the turns of one trial (call ids must be unique over the whole trial)."""

    def __init__(self, log: InputLog) -> None:
        self.log = log
        self._ids: set[str] = set()
        self._turn = 0

    def check(self, raw: Any, budget: int) -> CheckedTurn:
        """Check one turn; ``budget`` is what is left of ``TRANSCRIPT_CHARS``.

        Raises:
            TypeError: ``raw`` is not a ``ModelOutput`` (a bug in the model client).
        """
        if type(raw) is not ModelOutput and not isinstance(raw, ModelOutput):
            raise TypeError(f"model client returned {type(raw).__name__}, not a ModelOutput")
        self._turn += 1
        text = raw.text
        # _text's common case (a short ASCII string) first, without a call.
        if not (type(text) is str and (size := len(text)) <= TEXT_CHARS and text.isascii()):
            checked_text = self._text(text, "text")
            text = "" if checked_text is None else checked_text
            size = len(text)
        reasoning = raw.reasoning
        if reasoning is not None:  # _text(None, "reasoning") is None, nothing repaired
            reasoning = self._text(reasoning, "reasoning")
            if reasoning:
                size += len(reasoning)
        chars = 64 + size
        raw_calls = raw.tool_calls
        if type(raw_calls) is not tuple and not isinstance(raw_calls, tuple | list):
            self.log.repair("tool_calls")
            raw_calls = ()
        same = text is raw.text and reasoning is raw.reasoning and raw_calls is raw.tool_calls
        if raw_calls:
            calls, run_arguments, scans, chars, same_calls = self._calls(raw_calls, chars, budget)
            same = same and same_calls
        else:
            calls, run_arguments, scans = [], [], []
        output = raw
        if not same:
            output = ModelOutput(
                text, reasoning, tuple(calls), raw.usage, raw.provider_cost_usd, raw.retries, raw.served, raw.tier
            )
        u = output.usage  # clean counts, no cost, no retries: nothing for _accounting to repair
        if not (
            output.provider_cost_usd is None
            and output.served is None
            and output.tier is None
            and type(output.retries) is tuple
            and not output.retries
            and type(u) is Usage
            and type(u.input) is int
            and type(u.output) is int
            and type(u.cache_read) is int
            and type(u.cache_write) is int
            and type(u.reasoning) is int
            and type(u.cache_write_1h) is int
            and 0 <= u.input <= USAGE_TOKENS
            and 0 <= u.output <= USAGE_TOKENS
            and 0 <= u.cache_read <= USAGE_TOKENS
            and 0 <= u.cache_write <= USAGE_TOKENS
            and 0 <= u.reasoning <= USAGE_TOKENS
            and 0 <= u.cache_write_1h <= u.cache_write
        ):
            output = self._accounting(output)
        recorded = len(calls)
        runnable = recorded if recorded < TURN_TOOL_CALLS else TURN_TOOL_CALLS
        dropped = 0 if same else len(raw_calls) - recorded  # the same turn kept every call
        return CheckedTurn(output, tuple(run_arguments), runnable, chars, dropped, tuple(scans))

    def _calls(
        self, raw_calls: tuple[Any, ...] | list[Any], chars: int, budget: int
    ) -> tuple[list[ToolCall], list[Any], list[Scan | None], int, bool]:
        """The turn's calls as recorded, what the toolbox gets, their clean scans, the turn's size
        so far (``chars`` plus the calls kept), and whether every call was kept unchanged."""
        calls: list[ToolCall] = []
        run_arguments: list[Any] = []
        scans: list[Scan | None] = []
        same = True
        ids = self._ids
        for index, item in enumerate(raw_calls):
            if chars > budget:  # the turn alone is over the transcript: keep no more of it
                same = False
                break
            if type(item) is ToolCall and index < TURN_TOOL_CALLS:
                # _call's common case written out (once per tool call): a fresh clean id, a short
                # ASCII name, an arguments object the scan passes unrepaired. Anything else
                # (scan refusals included) takes _call from the start, which redoes these checks
                # with their repairs and log entries in their order.
                call_id, name, arguments = item.id, item.name, item.arguments
                if (
                    type(call_id) is str
                    and call_id
                    and (id_size := len(call_id)) <= NAME_CHARS
                    and call_id.isascii()
                    and call_id not in ids
                    and type(name) is str
                    and (name_size := len(name)) <= NAME_CHARS
                    and name.isascii()
                    and type(arguments) is dict
                ):
                    try:
                        checked: Scan | None = scan(arguments)
                    except (LimitError, NotJson):
                        checked = None
                    if checked is not None and not checked.repaired and checked.value is arguments:
                        ids.add(call_id)
                        calls.append(item)
                        run_arguments.append(arguments)
                        scans.append(checked)
                        chars += id_size + name_size + checked.chars
                        continue
            call, run, call_size, checked = self._call(item, index, excess=index >= TURN_TOOL_CALLS)
            same = same and call is item
            calls.append(call)
            run_arguments.append(run)
            scans.append(checked)
            chars += call_size
        return calls, run_arguments, scans, chars, same

    # -- text ------------------------------------------------------------------------------------

    def _text(self, value: Any, kind: str) -> str | None:
        if type(value) is str and len(value) <= TEXT_CHARS and value.isascii():
            return value  # the common case: nothing to repair or cut
        if value is None:
            if kind == "text":
                self.log.repair("text_type")
            return None
        if not isinstance(value, str):
            self.log.repair(f"{kind}_type")
            return "" if kind == "text" else None
        fixed = writable_text(value)
        if fixed is not value:
            self.log.repair("unicode")
        if len(fixed) > TEXT_CHARS:
            self.log.hit("text_chars")
            fixed = fixed[:TEXT_CHARS] + _CUT_NOTE.format(limit=TEXT_CHARS)
        return fixed

    # -- calls -----------------------------------------------------------------------------------

    def _call(self, item: Any, index: int, *, excess: bool) -> tuple[ToolCall, Any, int, Scan | None]:
        """The recorded call, what the toolbox gets, the recorded size, and the arguments' clean scan."""
        if not excess and type(item) is ToolCall:
            call_id, name, ids = item.id, item.name, self._ids
            # _id's and _name's common case (a fresh clean id, a short ASCII name): nothing to repair.
            if (
                type(call_id) is str
                and call_id
                and len(call_id) <= NAME_CHARS
                and call_id.isascii()
                and call_id not in ids
                and type(name) is str
                and len(name) <= NAME_CHARS
                and name.isascii()
            ):
                ids.add(call_id)
                recorded, run, size, checked = self._arguments(item.arguments)
                if recorded is item.arguments:
                    return item, run, len(call_id) + len(name) + size, checked
                return ToolCall(call_id, name, recorded), run, len(call_id) + len(name) + size, checked
        if not isinstance(item, ToolCall):
            self.log.repair("tool_call_type")
            item = ToolCall(None, f"<{type(item).__name__}>", "")  # type: ignore[arg-type]
        call_id = self._id(item.id, index)
        name = self._name(item.name)
        if excess:
            shown = preview(item.arguments, _EXCESS_PREVIEW)
            return ToolCall(call_id, name, shown), shown, len(call_id) + len(name) + len(shown), None
        recorded, run, size, checked = self._arguments(item.arguments)
        if call_id is item.id and name is item.name and recorded is item.arguments:
            return item, run, len(call_id) + len(name) + size, checked
        return ToolCall(call_id, name, recorded), run, len(call_id) + len(name) + size, checked

    def _id(self, value: Any, index: int) -> str:
        ids = self._ids
        if type(value) is str and value and len(value) <= NAME_CHARS and value.isascii() and value not in ids:
            ids.add(value)  # the common case: a fresh, clean id
            return value
        fixed = writable_text(value) if isinstance(value, str) else None
        if fixed is None or not fixed or len(fixed) > NAME_CHARS or fixed in self._ids:
            self.log.repair("tool_call_id")
            fixed = f"apiflow-{self._turn:03d}-{index}"
            while fixed in self._ids:
                fixed += "x"
        elif fixed is not value:
            self.log.repair("unicode")
        self._ids.add(fixed)
        return fixed

    def _name(self, value: Any) -> str:
        if isinstance(value, str) and len(value) <= NAME_CHARS:
            fixed = writable_text(value)
            if fixed is not value:
                self.log.repair("unicode")
            return fixed
        self.log.repair("tool_name")
        return preview(value, NAME_CHARS)

    def _arguments(self, value: Any) -> tuple[Any, Any, int, Scan | None]:
        """``(recorded, run, size, clean scan)`` for a call that runs."""
        if isinstance(value, str):
            if len(value) > ARGUMENT_CHARS:  # the toolbox refuses it by name; the record keeps a preview
                return preview(value), value, _PREVIEW_SIZE, None
            fixed = writable_text(value)
            if fixed is not value:
                self.log.repair("unicode")
            return fixed, fixed, len(fixed), None
        if value is None:
            return {}, {}, 2, None
        if not isinstance(value, dict):
            self.log.repair("arguments_type")
            shown = preview(value)
            return shown, shown, len(shown), None
        try:
            checked = scan(value)
        except (LimitError, NotJson):
            return preview(value), value, _PREVIEW_SIZE, None
        if checked.repaired:
            self.log.repair("unicode", checked.repaired)
            return checked.value, checked.value, checked.chars, None
        return checked.value, checked.value, checked.chars, checked

    # -- usage, cost, retries --------------------------------------------------------------------

    def _accounting(self, output: ModelOutput) -> ModelOutput:
        """The turn with its usage, cost and retries repaired (``check`` passes over clean ones)."""
        usage = _clean_usage(output.usage)
        cost = output.provider_cost_usd
        if cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost) or cost < 0
        ):
            cost = None
        retries = output.retries
        if not isinstance(retries, tuple | list) or not all(_json_dict(r) for r in retries):
            retries = tuple(r for r in retries if _json_dict(r)) if isinstance(retries, tuple | list) else ()
        served = output.served
        if served is not None and not (
            type(served) is tuple and len(served) == 3 and all(type(v) is str and len(v) <= 200 for v in served)
        ):
            served = None
        tier = output.tier if type(output.tier) is str and 0 < len(output.tier) <= TIER_CHARS else None
        same = usage is output.usage and cost is output.provider_cost_usd and retries is output.retries
        if same and served is output.served and tier is output.tier:
            return output
        self.log.repair("usage", usage is not output.usage)
        self.log.repair("provider_cost", cost is not output.provider_cost_usd)
        self.log.repair("retries", retries is not output.retries)
        self.log.repair("served", served is not output.served)
        self.log.repair("tier", tier is not output.tier)
        return ModelOutput(
            output.text, output.reasoning, output.tool_calls, usage, cost, tuple(retries), served, tier
        )


_PREVIEW_SIZE = 2_001


def _count(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) else 0
    if not isinstance(value, int):
        return 0
    return min(max(value, 0), USAGE_TOKENS)


def _clean_usage(usage: Any) -> Usage:
    """Counts in range, and the one-hour writes at most the writes they are a part of: a model or
    provider claiming more would be billed for writes it never made."""
    if not isinstance(usage, Usage):
        return Usage()
    parts = (
        usage.input, usage.output, usage.cache_read, usage.cache_write, usage.reasoning, usage.cache_write_1h
    )  # fmt: skip
    for part in parts:  # the common case, checked without building the clean counts
        if type(part) is not int or not 0 <= part <= USAGE_TOKENS:
            break
    else:
        if parts[5] <= parts[3]:
            return usage
    counts = [_count(p) for p in parts]
    counts[5] = min(counts[5], counts[3])
    if all(type(p) is int and p == c for p, c in zip(parts, counts, strict=True)):
        return usage
    return Usage(*counts)


def _json_dict(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    try:
        checked = scan(value)
    except (LimitError, NotJson):
        return False
    return checked.repaired == 0
