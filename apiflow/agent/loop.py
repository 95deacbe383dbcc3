"""The ReAct loop: ask the model, run its tool calls in order, repeat until a typed stop.

Stop conditions (``Termination``):
- the model replies without a tool call -> ``answered`` (visible text) or ``no_answer`` (empty);
- a ``clarify``/``report_blocked`` call ran -> that name, plus one empty assistant turn as published;
- a limit (messages, tool calls, tokens, wall time) -> ``limit`` with ``LoopOutcome.limit`` naming it
  (agent code that did not return before the clock ran out is named in ``agent_error``);
- the model's turns and tool results passed ``TRANSCRIPT_CHARS`` -> ``limit`` ``transcript_chars``;
- the provider gave up -> ``provider_error``; a bug in the model client or the tools -> ``harness_error``.
Neither of the last two is ever a model failure. The model's own mistakes (malformed arguments, bad
refs) go back to it as tool errors and are counted. Every turn passes ``TurnIntake`` first, so
nothing the model sends can raise out of the loop or leave an unwritable record; the bounds it
hits and the repairs made are in ``LoopOutcome.input`` (docs/design/031-untrusted-model-input.md).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from apiflow.agent.intake import TRANSCRIPT_CHARS, TURN_TOOL_CALLS, CheckedTurn, InputLog, TurnIntake
from apiflow.models.base import (
    AgentFault,
    ContextWindowExceeded,
    GenerateConfig,
    ModelClient,
    ModelOutput,
    ProviderError,
    ToolCall,
    Usage,
)
from apiflow.models.plugins import PluginModel
from apiflow.redact import SECRETS_ATTR, RedactingFilter, redact
from apiflow.results.record import Termination
from apiflow.tools import ToolResult
from apiflow.tools.limits import Scan, writable_text

LimitName = Literal["messages", "tool_calls", "tokens", "time", "transcript_chars", "context_window"]

_MESSAGE_OVERHEAD = 64  # characters charged per message beyond its strings (keys, ids, punctuation)
_EXCESS_CALL_MESSAGE = (
    f"Not run: this turn has more than {TURN_TOOL_CALLS} tool calls (limit parallel_calls = "
    f"{TURN_TOOL_CALLS}); send at most {TURN_TOOL_CALLS} per turn."
)

_ABSTAIN_TOOLS = {"clarify": Termination.CLARIFY, "report_blocked": Termination.REPORT_BLOCKED}

_HARNESS_ERROR_CHARS = 2000
_REDACTED_CHARS = 65536  # read of a message before redaction: far past the cut, so no key is split at it
_WRAPPERS = 8  # ``inner`` levels looked through (budget, plug-in wrappers)

logger = logging.getLogger(__name__)
logger.addFilter(RedactingFilter())  # a traceback may quote a model's or agent's exception text


@dataclass(frozen=True, slots=True)
class TrialLimits:
    """Per-trial limits; ``None`` means unlimited.

    Attributes:
        max_messages: Transcript length cap, system and user messages included (published: 500).
        max_tool_calls: Tool calls run in the trial.
        max_tokens: input + output + cache-read tokens over all model calls.
        max_seconds: Wall-clock budget of the loop (published: ~1,800 s).
    """

    max_messages: int | None = 500
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = 1800.0


class ToolRunner(Protocol):
    """What the loop needs from the toolbox."""

    def call(self, name: str, arguments: dict[str, Any] | str, scanned: Scan | None = None) -> ToolResult:
        """Run one call; ``scanned`` is intake's bounds scan of ``arguments`` (``Toolbox.call``)."""
        ...


@dataclass(slots=True)
class LoopOutcome:
    """How the loop ended and what it spent (``messages`` is the caller's list, extended in place)."""

    termination: Termination = Termination.NO_ANSWER
    limit: LimitName | None = None
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    parse_errors: int = 0
    usage: Usage = field(default_factory=Usage)
    calls: list[Usage] = field(default_factory=list)
    """Each model call's usage after intake, in order: a provider's long-context rate is decided per
    call, so a trial is priced from these (``calls_cost_usd``), never from ``usage``'s sums. Not
    recorded: the record keeps the sums."""
    tiers: list[str | None] = field(default_factory=list)
    """Each model call's served tier (``ModelOutput.tier``), by position in ``calls``: each call is
    priced at the tier its provider said served it (``calls_cost_usd``)."""
    provider_cost_usd: float | None = None
    retries: list[dict[str, Any]] = field(default_factory=list)
    served: list[list[str]] = field(default_factory=list)
    """Per provider call, what the provider said served it: [model, fingerprint, request id], and the
    service tier when the provider named one."""
    agent_error: str | None = None
    """Why the agent's own code ended the trial (``AgentFault``, or its model not returning before the
    trial's clock ran out): scored, unlike ``harness_error``."""
    harness_error: str | None = None
    input: InputLog = field(default_factory=InputLog)


def assistant_message(output: ModelOutput) -> dict[str, Any]:
    """The schema-1.0 assistant message for one model turn (content as blocks)."""
    blocks: list[dict[str, str]] = []
    if output.reasoning:
        blocks.append({"type": "reasoning", "reasoning": output.reasoning})
    if output.text:
        blocks.append({"type": "text", "text": output.text})
    message: dict[str, Any] = {"role": "assistant", "content": blocks}
    calls = output.tool_calls
    if calls[1:]:
        message["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
    elif calls:  # one call, the usual turn: its list without a comprehension's frame
        c = calls[0]
        message["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments}]
    return message


def tool_message(call: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The schema-1.0 tool message for one result (``error`` only on failure, content then "")."""
    message: dict[str, Any] = {
        "role": "tool",
        "content": result.content,
        "tool_call_id": call.id,
        "function": call.name,
    }
    if result.error is not None:
        message["error"] = result.error
    return message


def _layers(model: object) -> Iterator[object]:
    """The client and what it wraps (``inner``: budget, plug-in wrappers), outermost first. A broken
    attribute of a plug-in's ends the walk: it must never lose the record."""
    for _ in range(_WRAPPERS):
        if model is None:
            return
        yield model
        try:
            model = getattr(model, "inner", None)
        except Exception:  # noqa: BLE001
            return


def _attribute(model: object, name: str) -> Any:
    try:
        return getattr(model, name, None)
    except Exception:  # noqa: BLE001 - a plug-in's broken attribute: as if absent
        return None


def is_agent_code(model: object) -> bool:
    """Whether the model client is code that stands for the agent (a plug-in's model: ``agent_code``),
    looking through wrappers; the harness's own clients (litellm, offline) are not."""
    return any(_attribute(layer, "agent_code") is True for layer in _layers(model))


def release_agent_threads(model: object) -> None:
    """End the threads a trial's plug-in models ran on (``PluginModel.release``), looking through
    wrappers: a thread still blocked in the model's code ends when its block does, as a daemon."""
    for layer in _layers(model):
        if type(layer) is PluginModel:  # by type: a plug-in's object cannot pass for one
            layer.release()


def model_secrets(model: object) -> frozenset[str]:
    """The credential values a model client holds (its ``secrets``: the litellm adapter's, a plug-in's
    or an external agent's params), looking through wrappers (budget, plug-in)."""
    found: set[str] = set()
    for layer in _layers(model):
        values = _attribute(layer, "secrets")
        if isinstance(values, set | frozenset | list | tuple):
            found.update(v for v in values if isinstance(v, str))
    return frozenset(found)


def harness_error_text(exc: BaseException, secrets: frozenset[str] = frozenset()) -> str:
    """One line naming a harness fault (type and message), recorded on the trial.

    Every error text a trial records from any model or agent passes here, so it is redacted like
    the litellm adapter's (``apiflow.redact``: the environment's credentials, ``secrets`` — the
    model's params' — and credential shapes) and only then cut. Always writable: a message may
    quote provider or model text (lone surrogates included), and an exception whose ``__str__``
    itself fails must still leave a record.
    """
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - the record must not depend on a broken __str__
        message = "<message not printable>"
    text = redact(f"{type(exc).__name__}: {message}"[:_REDACTED_CHARS], secrets)
    return writable_text(text[:_HARNESS_ERROR_CHARS])


class _Loop:
    """One run of the loop; the state lives here so each step stays a short method."""

    def __init__(
        self,
        model: ModelClient,
        tools: ToolRunner,
        schemas: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        limits: TrialLimits,
        config: GenerateConfig,
    ) -> None:
        self.model, self.tools, self.schemas = model, tools, schemas
        self.messages, self.limits, self.config = messages, limits, config
        self.out = LoopOutcome()
        self.deadline = None if limits.max_seconds is None else time.monotonic() + limits.max_seconds
        self.intake = TurnIntake(self.out.input)
        self.transcript_chars = 0
        # Agent code (a plug-in) gets its own copy of the conversation: what it edits in place, trims
        # or forges stays in its copy, and the record keeps what the harness sent and received. Each
        # message is copied once, when it is first shown; the harness's own clients read the record.
        self.view: list[dict[str, Any]] | None = [] if is_agent_code(model) else None
        self.shown = 0

    def _shown(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """What the model is handed: the record itself for the harness's own clients, else the agent's
        copy with the messages added since its last turn appended (copied deeply, once each)."""
        view = self.view
        if view is None:
            return messages
        view.extend(copy.deepcopy(m) for m in messages[self.shown :])
        self.shown = len(messages)
        return view

    def _stop_limit(self, name: LimitName) -> bool:
        self.out.termination, self.out.limit = Termination.LIMIT, name
        if name == "transcript_chars":
            self.out.input.hit(name)
        return True

    def _run_calls(self, turn: CheckedTurn) -> bool:
        """Run one turn's calls in order; True when the trial must stop."""
        # The limit checks (messages, time, transcript) written out: this runs once per tool
        # call, the hottest loop of a trial. Only this loop appends here, so the transcript's
        # length is counted rather than asked for per call.
        out, messages, call_tool = self.out, self.messages, self.tools.call
        cap, max_messages, deadline = self.limits.max_tool_calls, self.limits.max_messages, self.deadline
        scans, run_arguments, runnable = turn.scans, turn.run_arguments, turn.runnable
        length = len(messages)
        for index, call in enumerate(turn.output.tool_calls):
            if cap is not None and out.tool_calls >= cap:
                return self._stop_limit("tool_calls")
            if max_messages is not None and length >= max_messages:
                return self._stop_limit("messages")
            if deadline is not None and time.monotonic() >= deadline:
                return self._stop_limit("time")
            if self.transcript_chars > TRANSCRIPT_CHARS:
                return self._stop_limit("transcript_chars")
            if index < runnable:
                scanned = scans[index] if scans else None  # intake scans every call, or none (tests)
                result = call_tool(call.name, run_arguments[index], scanned)
                out.tool_calls += 1
                out.parse_errors += bool(result.parse_error)
            else:  # a fresh result per call: messages must not share one error dict
                result = ToolResult.failed("unknown", _EXCESS_CALL_MESSAGE, limit="parallel_calls")
            error = result.error
            if result.limit is not None:
                out.input.hit(result.limit)
            message: dict[str, Any] = {
                "role": "tool",
                "content": result.content,
                "tool_call_id": call.id,
                "function": call.name,
            }
            self.transcript_chars += _MESSAGE_OVERHEAD + len(result.content)
            if error is not None:  # as tool_message: ``error`` only on failure
                out.tool_errors += 1
                message["error"] = error
                self.transcript_chars += len(error["message"])
            messages.append(message)
            length += 1
            if result.terminated is not None:
                # Published shape: the abstention's tool result, then one empty assistant turn.
                self.out.termination = _ABSTAIN_TOOLS[result.terminated]
                self.messages.append({"role": "assistant", "content": [{"type": "text", "text": ""}]})
                return True
        return False

    async def run(self) -> LoopOutcome:
        messages, out = self.messages, self.out
        max_messages, max_tokens = self.limits.max_messages, self.limits.max_tokens
        # Token sums kept as ints and written to ``out.usage`` once, however the loop ends (a
        # limit, a fault, our timer): the same sum as adding each turn's ``Usage``, without
        # building one per model call.
        tin = tout = tread = twrite = treason = thour = 0  # out is fresh: Usage() so far
        per_call = out.calls
        try:
            while True:
                if max_messages is not None and len(messages) >= max_messages:
                    self._stop_limit("messages")
                    break
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    self._stop_limit("time")  # spent by the tools: the model is not asked in vain
                    break
                raw = await self.model.generate(self._shown(messages), self.schemas, self.config)
                try:
                    if self.view is not None:  # agent code keeps no handle on what the record holds
                        raw = copy.deepcopy(raw)
                    turn = self.intake.check(raw, TRANSCRIPT_CHARS - self.transcript_chars)
                except Exception as exc:  # an object the model handed back broke on reading
                    if not is_agent_code(self.model):
                        raise  # the harness's own client: a harness fault
                    raise AgentFault(f"the model's turn could not be read: {type(exc).__name__}: {exc}") from None
                output = turn.output
                # What the call spent (written out here: this and the checks run once per model call).
                out.model_calls += 1
                u = output.usage
                tin, tout, tread = tin + u.input, tout + u.output, tread + u.cache_read
                twrite, treason = twrite + u.cache_write, treason + u.reasoning
                thour += u.cache_write_1h
                per_call.append(u)
                tier = output.tier  # intake kept it only as a short name
                out.tiers.append(tier)
                if output.retries:
                    out.retries.extend(output.retries)
                if output.served is not None:
                    out.served.append([*output.served, tier] if tier is not None else list(output.served))
                if output.provider_cost_usd is not None:
                    out.provider_cost_usd = (out.provider_cost_usd or 0.0) + output.provider_cost_usd
                messages.append(assistant_message(output))
                calls = output.tool_calls
                self.transcript_chars += turn.chars
                if not calls and not turn.dropped:
                    answered = bool(output.text.strip())
                    self.out.termination = Termination.ANSWERED if answered else Termination.NO_ANSWER
                    break
                if max_tokens is not None and tin + tout + tread >= max_tokens:
                    self._stop_limit("tokens")
                    break
                if self.transcript_chars > TRANSCRIPT_CHARS:
                    self._stop_limit("transcript_chars")
                    break
                if self._run_calls(turn):
                    break
        finally:
            if out.model_calls:
                out.usage = Usage(tin, tout, tread, twrite, treason, thour)
        return self.out


async def run_loop(
    model: ModelClient,
    tools: ToolRunner,
    schemas: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    *,
    limits: TrialLimits | None = None,
    config: GenerateConfig | None = None,
) -> LoopOutcome:
    """Run the ReAct loop until a stop condition, extending ``messages`` in place.

    Args:
        model: The model taking the assistant turns.
        tools: Runs one tool call (the trial's ``Toolbox``).
        schemas: Tool JSON schemas shown to the model.
        messages: The transcript so far (system + user); the loop appends to it.
        limits: Trial limits (defaults: 500 messages, 1,800 s).
        config: Generation parameters (default temperature 1.0).

    Returns:
        The outcome. A ``ProviderError`` ends the loop as ``provider_error`` and any other exception
        from the model client or the tools as ``harness_error`` (named in ``harness_error``), so a
        harness fault can never pass for a model failure.
    """
    limits = limits or TrialLimits()
    loop = _Loop(model, tools, schemas, messages, limits, config or GenerateConfig())
    # One timer for the whole trial (not one per model call): it can only fire while the loop
    # awaits the model, since tools run synchronously, so a cut never splits a tool call. Agent code
    # runs on a thread of its own (``PluginModel``), so a model that blocks cannot hold the timer.
    budget = asyncio.timeout(limits.max_seconds)
    try:
        async with budget:
            return await loop.run()
    except TimeoutError as exc:
        if budget.expired():
            loop.out.termination, loop.out.limit = Termination.LIMIT, "time"
            if loop.view is not None:  # agent code: its call is abandoned, perhaps still running
                loop.out.agent_error = (
                    f"the model did not return within the trial's time limit (max_seconds="
                    f"{limits.max_seconds:g}); its call was abandoned"
                )
        else:  # raised by the client itself, not our budget: a harness fault
            loop.out.termination = Termination.HARNESS_ERROR
            loop.out.harness_error = harness_error_text(exc, model_secrets(model))
    except AgentFault as exc:  # the agent's own code failed: its outcome, graded and counted
        loop.out.termination = Termination.NO_ANSWER
        loop.out.agent_error = harness_error_text(exc, model_secrets(model))
    except ContextWindowExceeded as exc:  # the model's own limit: scored, like running out of messages
        loop.out.termination, loop.out.limit = Termination.LIMIT, "context_window"
        loop.out.retries.extend(exc.retries)
    except ProviderError as exc:
        loop.out.termination = Termination.PROVIDER_ERROR
        loop.out.retries.extend(exc.retries)
        loop.out.harness_error = harness_error_text(exc, model_secrets(model))
    except Exception as exc:  # noqa: BLE001 - a harness bug: recorded and counted, never a model failure
        # Loud for whoever runs the harness (full traceback, redacted), recorded on the trial, counted apart.
        secrets = model_secrets(model)
        logger.exception("harness error in the trial loop", extra={SECRETS_ATTR: secrets})
        loop.out.termination = Termination.HARNESS_ERROR
        loop.out.harness_error = harness_error_text(exc, secrets)
    finally:
        if loop.view is not None:
            release_agent_threads(model)
    return loop.out
