"""What the stand-in provider is told to do, and what it counts while doing it.

``StandinConfig`` is the whole of its behaviour (limits, fault odds, latency, the batch clock), frozen
so one server plays one way; ``StandinStats`` is what it answered and would bill, read at
``GET /stats`` by the tests and benchmarks as the provider's independent view of a run. Kept apart
from the answering code (``standin_provider``) so the server and the batch book can name them
without pulling in the request logic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from apiflow.bank import DEFAULT_BANK

Wire = Literal["openai", "anthropic", "responses"]
"""The API shape of a request: OpenAI chat completions, Anthropic Messages or OpenAI Responses."""
Tier = Literal["sync", "batch"]
"""The price tier a request is billed on: the synchronous endpoints or a batch API."""


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
