"""The stand-in provider's behaviour: what it answers to a request, wire by wire, and its faults.

``StandinProvider`` turns one parsed request into a status, headers and a body: it rebuilds the
offline model for the conversation's task and replays the conversation (stateless, so retries and
concurrent trials of one task get consistent answers), and plays the faults providers have
(RPM/TPM limits as 429 + ``Retry-After``, 5xx, hung requests, malformed tool-call JSON, empty
replies). The HTTP transport that serves it is ``apiflow.testing.standin_server``.

The batch tiers (OpenAI's Batch API, Anthropic's Message Batches: ``apiflow.testing.standin_batches``)
answer each request with the same code (``answer``), billed on the ``batch`` tier of the stats.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from apiflow.agent.prompts import user_message
from apiflow.bank import DEFAULT_BANK, Task, load_bank
from apiflow.models.base import GenerateConfig, ModelOutput
from apiflow.models.registry import make_model
from apiflow.testing import standin_anthropic as anthropic_wire
from apiflow.testing import standin_openai as openai_wire
from apiflow.testing import standin_responses as responses_wire
from apiflow.testing.standin_anthropic import Rejected
from apiflow.testing.standin_batch_book import BatchBook
from apiflow.testing.standin_cache import PromptBill, PromptCache, is_marked, prompt_blocks
from apiflow.testing.standin_openai import CHARS_PER_TOKEN, ServerFault
from apiflow.testing.standin_openai import error_body as _error

Wire = Literal["openai", "anthropic", "responses"]
Tier = Literal["sync", "batch"]

STORED_ITEMS = 65536
"""Responses reasoning item ids the stand-in keeps for ``store`` on (bounded: it is a test server)."""


@dataclass(frozen=True)
class StandinConfig:
    """Behaviour of the stand-in provider.

    Attributes:
        bank: Bank whose tasks the conversations come from.
        latency_s: Delay before each answer.
        rpm / tpm: Limits (None: unlimited); over them the answer is 429 with ``Retry-After``.
        burst_s: Seconds of traffic a full limit bucket holds.
        p_429 / p_500 / p_timeout / p_malformed / p_empty: Probability per request of each fault.
        timeout_s: How long a "timeout" request hangs before the connection is dropped.
        seed: Seed of the fault dice.
        echo_auth: Opt-in (secrets tests): fault bodies quote the request's ``Authorization`` /
            ``x-api-key`` header back, as careless real providers do, so the harness's redaction
            of recorded provider errors has something to catch (tests/security/).
        p_garbage: Probability per request of a 200 whose body is not JSON (a broken proxy).
        retry_after_s: The ``Retry-After`` an injected 429 (``p_429``) asks for (limit 429s ask
            for the real wait).
        reasoning: The OpenAI wire reasons as open-weight reasoning models do: each reply carries
            ``reasoning_content`` and ``completion_tokens_details.reasoning_tokens``, and an assistant
            turn with tool calls sent back without its ``reasoning_content`` is refused (400).
            The Anthropic wire reasons when the request enables ``thinking``.
        plays: ``(provider model name, offline model)`` pairs: a request for ``claude-sonnet-4-6``
            is played by ``apiflow/sim:ace``, so litellm routes a real model id (with its real
            capabilities: thinking, reasoning effort) to the stand-in. Other names must be
            offline model names.
        require_content: The OpenAI wire fails a message without a ``content`` key with HTTP 500,
            as llama-cpp-python's server does (OpenAI accepts one; ``standin_openai.check_request``).
        batch_latency_s: Seconds (wall, ``time.monotonic``) from a batch's creation until it ends,
            on both batch APIs; its requests are done one after another across that span (request
            ``i`` of ``n`` at ``(i + 1) / n`` of it), so a cancel or an expiry in between keeps the
            ones done.
        batch_expire_s: Seconds after which a batch that has not ended expires: the requests done by
            then are kept, the rest are reported expired (the providers' 24 hours by default).
        p_batch_fail: Probability per batch request of a per-request error (OpenAI: a 500 in the
            error file; Anthropic: an ``errored`` result with ``api_error``). Rolled on dice seeded by
            ``seed``, the ``custom_id`` and how many times that ``custom_id`` was run before, so a
            batch plays the same way every time and a resubmitted request gets a fresh roll.
    """

    bank: str = str(DEFAULT_BANK)
    latency_s: float = 0.0
    rpm: float | None = None
    tpm: float | None = None
    burst_s: float = 1.0
    p_429: float = 0.0
    p_500: float = 0.0
    p_timeout: float = 0.0
    timeout_s: float = 30.0
    p_malformed: float = 0.0
    p_empty: float = 0.0
    seed: int = 0
    echo_auth: bool = False
    p_garbage: float = 0.0
    retry_after_s: float = 1.0
    reasoning: bool = False
    plays: tuple[tuple[str, str], ...] = ()
    require_content: bool = False
    batch_latency_s: float = 0.0
    batch_expire_s: float = 86400.0
    p_batch_fail: float = 0.0


@dataclass
class TierStats:
    """What one price tier answered and would bill (``StandinStats.sync`` / ``.batch``)."""

    requests: int = 0
    """Requests the answer code ran for (sync: past the limits and fault dice; batch: each request of
    a batch that was processed, injected failures included; expired and cancelled ones are not)."""
    answered: int = 0
    """Of them, those answered 200: the billed ones."""
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0
    reasoning: int = 0


@dataclass
class StandinStats:
    """Counters, readable at ``GET /stats``."""

    requests: int = 0
    answered: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    timeouts: int = 0
    malformed: int = 0
    empty: int = 0
    garbage: int = 0
    rejected: int = 0
    """Requests refused as a live API would refuse them (400: broken tool loops, lost or altered reasoning;
    404: a Responses item or response it does not hold)."""
    billed_input: int = 0
    """Tokens of answered requests by priced kind: what a real provider would bill (the chaos
    suite's independent measure of true spend, killed attempts included)."""
    billed_output: int = 0
    billed_cache_read: int = 0
    billed_cache_write: int = 0
    billed_cache_write_1h: int = 0
    """Of ``billed_cache_write``, the one-hour writes (2x input where a five-minute one is 1.25x)."""
    billed_reasoning: int = 0
    cache_marks: list[int] = field(default_factory=list)
    """``cache_control`` marks of each Messages API request, in order of arrival."""
    cache_keys: list[str] = field(default_factory=list)
    """The ``prompt_cache_key`` of each answered OpenAI request, chat or Responses ("" when none was sent)."""
    in_flight: int = 0
    peak_in_flight: int = 0
    """Most requests open at once (being handled, latency included): bench/bench_concurrency.py."""
    answered_at: list[float] = field(default_factory=list)
    limited_at: list[float] = field(default_factory=list)
    """When each 429 was sent (the share of 429s over time: bench/bench_ratelimit.py)."""
    in_flight_at: list[int] = field(default_factory=list)
    """Requests open at each answer (beside ``answered_at``): what a client side held, over time."""
    sync: TierStats = field(default_factory=TierStats)
    """What the synchronous endpoints (chat completions, Messages, Responses) answered and billed;
    ``billed_*`` above is both tiers together, ``answered`` / ``rejected`` / ``server_errors`` count
    the synchronous tier only."""
    batch: TierStats = field(default_factory=TierStats)
    """Requests run inside batches (either provider's batch API), billed at the batch price."""
    paid_twice: int = 0
    """``custom_id``s (per provider) answered 200 in more than one batch: money paid twice."""


class _Hang(float):
    """Seconds a hung request waits before its connection is dropped (it is never answered)."""


class _Limiter:
    """Server-side RPM/TPM buckets (the provider's view of the limit)."""

    def __init__(self, rpm: float | None, tpm: float | None, burst_s: float) -> None:
        now = time.monotonic()
        self.buckets = [
            [rate / 60.0, max(1.0, rate / 60.0 * burst_s), max(1.0, rate / 60.0 * burst_s), now]
            for rate in (rpm, tpm)
            if rate
        ]
        self.kinds = [k for k, rate in (("requests", rpm), ("tokens", tpm)) if rate]
        self.lock = threading.Lock()

    def admit(self, tokens: float) -> tuple[float, str] | None:
        """None when admitted, else seconds until the request would fit and the limit that binds
        (``requests`` or ``tokens``: the 429's message names it, as OpenAI's do)."""
        with self.lock:
            now = time.monotonic()
            waits = []
            for bucket, kind in zip(self.buckets, self.kinds, strict=True):
                rate, cap, level, stamp = bucket
                level = min(cap, level + (now - stamp) * rate)
                bucket[2], bucket[3] = level, now
                need = 1.0 if kind == "requests" else min(tokens, cap)
                if level < need:
                    waits.append(((need - level) / rate, kind))
            if waits:
                return max(waits)
            for bucket, kind in zip(self.buckets, self.kinds, strict=True):
                bucket[2] -= 1.0 if kind == "requests" else min(tokens, bucket[1])
            return None


class StandinProvider:
    """The request logic, independent of HTTP (the handler below is a thin adapter)."""

    def __init__(self, config: StandinConfig) -> None:
        self.config = config
        bank = load_bank(config.bank)
        self.tasks: dict[str, Task] = {user_message(t): t for t in bank.tasks.values()}
        self.limiter = _Limiter(config.rpm, config.tpm, config.burst_s)
        self.stats = StandinStats()
        self.dice = random.Random(config.seed)
        self.lock = threading.Lock()
        self.key = hashlib.sha256(f"apiflow-standin-thinking|{config.seed}".encode()).digest()
        """Signs the thinking blocks and reasoning items this server mints, so it can tell a replayed
        one from a forged or altered one."""
        self.prompt_cache = PromptCache()
        """Anthropic's prompt cache, billed as Anthropic bills it (``standin_cache``)."""
        self.stored_reasoning: dict[str, None] = {}
        """Ids of the Responses reasoning items answered with ``store`` on (the API keeps them; the
        oldest go past ``STORED_ITEMS``)."""
        self.batches = BatchBook(self)
        """Files and batches of both batch APIs, in memory (``standin_batch_book``)."""

    def _roll(self) -> float:
        with self.lock:
            return self.dice.random()

    def _count(self, name: str) -> None:
        with self.lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)
            if name == "answered":
                self.stats.answered_at.append(time.monotonic())
                self.stats.in_flight_at.append(self.stats.in_flight)
            elif name == "rate_limited":
                self.stats.limited_at.append(time.monotonic())

    def handle(
        self, body: dict[str, Any], auth: str = "", wire: Wire = "openai"
    ) -> tuple[int, dict[str, str], dict[str, Any] | str | None]:
        """``(status, headers, json body)``; a None body means "hang up without answering", a str
        body is sent as it is (not JSON).

        ``auth`` is the request's credential header, quoted in fault bodies only with ``echo_auth``;
        ``wire`` is the API shape (``openai`` chat completions or ``anthropic`` messages). The
        faults are the same on both (a Messages reply cannot carry malformed tool JSON, so
        ``p_malformed`` applies to the OpenAI wire only). Blocks for the latency (``ahandle`` is
        the same answer for the server's event loop).
        """
        self._enter()
        try:
            early, wait = self._before(body, auth, wire)
            if early is not None:
                return early
            time.sleep(wait)
            return (0, {}, None) if isinstance(wait, _Hang) else self._after(body, auth, wire)
        finally:
            self._leave()

    async def ahandle(
        self, body: dict[str, Any], auth: str = "", wire: Wire = "openai"
    ) -> tuple[int, dict[str, str], dict[str, Any] | str | None]:
        """``handle`` on an event loop: the latency and a hung request wait without a thread."""
        self._enter()
        try:
            early, wait = self._before(body, auth, wire)
            if early is not None:
                return early
            if wait:
                await asyncio.sleep(wait)
            return (0, {}, None) if isinstance(wait, _Hang) else self._after(body, auth, wire)
        finally:
            self._leave()

    def _enter(self) -> None:
        with self.lock:
            self.stats.requests += 1
            self.stats.in_flight += 1
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)

    def _leave(self) -> None:
        with self.lock:
            self.stats.in_flight -= 1

    def _before(
        self, body: dict[str, Any], auth: str, wire: Wire
    ) -> tuple[tuple[int, dict[str, str], dict[str, Any] | str] | None, float]:
        """Limits and the fault dice, in their fixed order: ``(answer, None)`` when the request
        ends here, else ``(None, seconds to wait)`` before ``_after`` answers it (a hung
        request waits a ``_Hang``: its ``timeout_s``, then the connection is dropped)."""
        c = self.config
        error = anthropic_wire.error_body if wire == "anthropic" else _error
        echo = f" (request credentials: {auth})" if c.echo_auth and auth else ""
        sent = (body.get("messages") or []) if wire != "responses" else (body.get("input") or [])
        prompt_tokens = (
            sum(len(json.dumps(m)) for m in sent) // CHARS_PER_TOKEN if self.limiter.buckets else 0
        )
        refused = self.limiter.admit(prompt_tokens + int(body.get("max_tokens") or 0) // 8)
        if refused is None and c.p_429 and self._roll() < c.p_429:
            refused = c.retry_after_s, "requests"
        if refused is not None:
            wait, kind = refused
            self._count("rate_limited")
            headers = {
                "retry-after": str(max(1, math.ceil(wait))),  # whole seconds (RFC 9110); -ms is exact
                "retry-after-ms": str(int(wait * 1000) + 1),
            }
            return (429, headers, error("rate_limit_exceeded", f"Rate limit reached for {kind}" + echo)), 0.0
        if c.p_500 and self._roll() < c.p_500:
            self._count("server_errors")
            message = "The server had an error while processing your request" + echo
            return (500, {}, error("server_error", message)), 0.0
        if c.p_garbage and self._roll() < c.p_garbage:
            self._count("garbage")
            return (200, {}, "<html>upstream proxy error" + echo + "</html>"), 0.0
        if c.p_timeout and self._roll() < c.p_timeout:
            self._count("timeouts")
            return None, _Hang(c.timeout_s)
        return None, c.latency_s

    def _after(
        self, body: dict[str, Any], auth: str, wire: Wire
    ) -> tuple[int, dict[str, str], dict[str, Any] | str | None]:
        return self.answer(body, wire, "sync", auth)

    def answer(
        self, body: dict[str, Any], wire: Wire, tier: Tier = "sync", auth: str = ""
    ) -> tuple[int, dict[str, str], dict[str, Any]]:
        """What the wire's endpoint answers ``body`` (no limits, latency or fault dice before it):
        ``(status, headers, json body)``, a 200 billed on ``tier`` (a batch request is answered by
        this same code, so its answer is the synchronous one)."""
        c = self.config
        error = anthropic_wire.error_body if wire == "anthropic" else _error
        sync = tier == "sync"
        with self.lock:
            getattr(self.stats, tier).requests += 1
        echo = f" (request credentials: {auth})" if c.echo_auth and auth else ""
        messages = body.get("messages") or []
        try:
            if wire == "anthropic":
                anthropic_wire.check_request(body, self.key)
                conversation = anthropic_wire.to_schema_messages(body)
            elif wire == "responses":
                with self.lock:
                    responses_wire.check_request(body, self.key, self.stored_reasoning)
                conversation = responses_wire.to_schema_messages(body)
            else:
                openai_wire.check_request(messages, c.reasoning, c.require_content)
                conversation = openai_wire.to_schema_messages(messages)
        except ServerFault as exc:
            if sync:
                self._count("server_errors")
            return 500, {}, error("internal_server_error", str(exc))
        except Rejected as exc:
            if sync:
                self._count("rejected")
            return getattr(exc, "status", 400), {}, error("invalid_request_error", str(exc))
        try:
            output = self._play(body["model"], conversation, body.get("tools") or [])
        except LookupError as exc:
            return 400, {}, error("invalid_request_error", str(exc) + echo)
        turn = sum(m["role"] == "assistant" for m in conversation)
        if wire == "anthropic":
            thinking = _thinking(output, turn) if anthropic_wire.thinking_enabled(body) else None
            prompt = self.prompt_cache.bill(body)
            with self.lock:
                self.stats.cache_marks.append(sum(map(is_marked, prompt_blocks(body))))
            completion = self._messages_reply(body["model"], output, thinking, prompt)
            billed = completion["usage"]
            self._bill(tier, billed["input_tokens"], output.usage.output, billed["cache_read_input_tokens"],
                       billed["cache_creation_input_tokens"], billed["output_tokens"] - output.usage.output,
                       billed["cache_creation"]["ephemeral_1h_input_tokens"])  # fmt: skip
        elif wire == "responses":
            reasoning = _thinking(output, turn) if responses_wire.reasoning_enabled(body) else None
            completion = responses_wire.render_response(body, output, reasoning, self.key)
            self._store(completion)
            with self.lock:
                self.stats.cache_keys.append(str(body.get("prompt_cache_key", "")))
            spent = completion["usage"]["output_tokens_details"]["reasoning_tokens"]
            self._bill(tier, output.usage.input, output.usage.output, output.usage.cache_read, 0, spent)
        else:
            reasoning = _thinking(output, turn) if c.reasoning else None
            with self.lock:
                self.stats.cache_keys.append(str(body.get("prompt_cache_key", "")))
            completion = self._completion(body["model"], output, reasoning, openai_wire.served_tier(body))
            spent = completion["usage"]["completion_tokens_details"]["reasoning_tokens"]
            self._bill(tier, output.usage.input, output.usage.output, output.usage.cache_read, 0, spent)
        if sync:
            self._count("answered")
        return 200, {}, completion

    def _messages_reply(
        self, model: str, output: ModelOutput, thinking: str | None, prompt: PromptBill
    ) -> dict[str, Any]:
        if self.config.p_empty and self._roll() < self.config.p_empty:  # the empty-reply fault, same dice
            self._count("empty")
            output = ModelOutput(usage=output.usage)
        return anthropic_wire.render_message(model, output, thinking, self.key, prompt)

    def _store(self, response: dict[str, Any]) -> None:
        """Keep a ``store`` reply's reasoning item ids, as the Responses API keeps the items."""
        if not response["store"]:
            return
        with self.lock:
            for item in response["output"]:
                if item["type"] == "reasoning":
                    self.stored_reasoning[item["id"]] = None
            while len(self.stored_reasoning) > STORED_ITEMS:
                del self.stored_reasoning[next(iter(self.stored_reasoning))]

    def _bill(
        self,
        tier: Tier,
        input: int,
        output: int,
        cache_read: int,
        cache_write: int,
        reasoning: int,
        cache_write_1h: int = 0,
    ) -> None:
        with self.lock:
            kinds = getattr(self.stats, tier)
            kinds.answered += 1
            kinds.input += input
            kinds.output += output
            kinds.cache_read += cache_read
            kinds.cache_write += cache_write
            kinds.cache_write_1h += cache_write_1h
            kinds.reasoning += reasoning
            self.stats.billed_input += input
            self.stats.billed_output += output
            self.stats.billed_cache_read += cache_read
            self.stats.billed_cache_write += cache_write
            self.stats.billed_cache_write_1h += cache_write_1h
            self.stats.billed_reasoning += reasoning

    def _play(self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelOutput:
        user = next((m["content"] for m in messages if m["role"] == "user"), None)
        task = self.tasks.get(user or "")
        if task is None:
            raise LookupError("the stand-in only knows conversations about its bank's tasks")
        model = dict(self.config.plays).get(model, model)
        seed = int(hashlib.sha256(f"{model}|{task.id}".encode()).hexdigest()[:12], 16)
        config = GenerateConfig()
        # Stateless: replay every earlier assistant turn so the scripted model is where the conversation is.
        turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]

        async def replay() -> ModelOutput:
            player = make_model(model, task, seed)
            for index in turns:
                await player.generate(messages[:index], tools, config)
            return await player.generate(messages, tools, config)

        return _drive(replay)

    def _completion(
        self, model: str, output: ModelOutput, reasoning: str | None = None, service_tier: str | None = None
    ) -> dict[str, Any]:
        c = self.config
        calls = openai_wire.wire_calls(output.tool_calls)
        text = output.text
        if calls and c.p_malformed and self._roll() < c.p_malformed:
            self._count("malformed")
            calls[0]["function"]["arguments"] = calls[0]["function"]["arguments"][:-1] or "{"
        if c.p_empty and self._roll() < c.p_empty:
            self._count("empty")
            calls, text = [], ""
        return openai_wire.render_completion(model, text, calls, output.usage, reasoning, service_tier)


def _drive(make: Callable[[], Coroutine[Any, Any, ModelOutput]]) -> ModelOutput:
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


def _thinking(output: ModelOutput, turn: int) -> str:
    """The reasoning the stand-in shows for one turn: deterministic, so records replay exactly."""
    if output.tool_calls:
        names = ", ".join(call.name for call in output.tool_calls)
        return f"Turn {turn}: the next step needs {names}; checking what the last results showed."
    return f"Turn {turn}: the results so far answer the task; writing the answer card."
