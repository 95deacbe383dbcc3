"""The stand-in provider's behaviour: what it answers to a request, wire by wire, and its faults.

``StandinProvider`` turns one parsed request into a status, headers and a body: the conversation is
played on the offline model for its task (``standin_player``), and the faults providers have are
played around it (RPM/TPM limits as 429 + ``Retry-After`` from ``standin_faults``, 5xx, hung
requests, malformed tool-call JSON, empty replies). What it is told and what it counts are
``standin_config``; the HTTP transport that serves it is ``apiflow.testing.standin_server``.

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
from typing import Any

from apiflow.agent.prompts import user_message
from apiflow.bank import Task, load_bank
from apiflow.models.base import ModelOutput
from apiflow.testing import standin_anthropic as anthropic_wire
from apiflow.testing import standin_openai as openai_wire
from apiflow.testing import standin_responses as responses_wire
from apiflow.testing.standin_anthropic import Rejected
from apiflow.testing.standin_batch_book import BatchBook
from apiflow.testing.standin_cache import PromptBill, PromptCache, is_marked, prompt_blocks
from apiflow.testing.standin_config import StandinConfig, StandinStats, Tier, Wire
from apiflow.testing.standin_faults import Hang, Limiter
from apiflow.testing.standin_openai import CHARS_PER_TOKEN, ServerFault
from apiflow.testing.standin_openai import error_body as _error
from apiflow.testing.standin_player import play, thought

STORED_ITEMS = 65536
"""Responses reasoning item ids the stand-in keeps for ``store`` on (bounded: it is a test server)."""


class StandinProvider:
    """The request logic, independent of HTTP (the handler below is a thin adapter)."""

    def __init__(self, config: StandinConfig) -> None:
        self.config = config
        bank = load_bank(config.bank)
        self.tasks: dict[str, Task] = {user_message(t): t for t in bank.tasks.values()}
        self.limiter = Limiter(config.rpm, config.tpm, config.burst_s)
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
            return (0, {}, None) if isinstance(wait, Hang) else self._after(body, auth, wire)
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
            return (0, {}, None) if isinstance(wait, Hang) else self._after(body, auth, wire)
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
        request waits a ``Hang``: its ``timeout_s``, then the connection is dropped)."""
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
            return None, Hang(c.timeout_s)
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
            output = play(self.tasks, c.plays, body["model"], conversation, body.get("tools") or [])
        except LookupError as exc:
            return 400, {}, error("invalid_request_error", str(exc) + echo)
        turn = sum(m["role"] == "assistant" for m in conversation)
        if wire == "anthropic":
            thinking = thought(output, turn) if anthropic_wire.thinking_enabled(body) else None
            prompt = self.prompt_cache.bill(body)
            with self.lock:
                self.stats.cache_marks.append(sum(map(is_marked, prompt_blocks(body))))
            completion = self._messages_reply(body["model"], output, thinking, prompt)
            billed = completion["usage"]
            self._bill(tier, billed["input_tokens"], output.usage.output, billed["cache_read_input_tokens"],
                       billed["cache_creation_input_tokens"], billed["output_tokens"] - output.usage.output,
                       billed["cache_creation"]["ephemeral_1h_input_tokens"])  # fmt: skip
        elif wire == "responses":
            reasoning = thought(output, turn) if responses_wire.reasoning_enabled(body) else None
            completion = responses_wire.render_response(body, output, reasoning, self.key)
            self._store(completion)
            with self.lock:
                self.stats.cache_keys.append(str(body.get("prompt_cache_key", "")))
            spent = completion["usage"]["output_tokens_details"]["reasoning_tokens"]
            self._bill(tier, output.usage.input, output.usage.output, output.usage.cache_read, 0, spent)
        else:
            reasoning = thought(output, turn) if c.reasoning else None
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
