"""The one provider retry layer (tenacity), pluggable into the litellm adapter as its ``RetryHook``.

Exactly one layer retries provider calls: litellm's own retries are off (``num_retries=0``)
and this hook decides. It retries only what a later attempt can fix — 429, 5xx/529,
timeouts, connection errors — with full-jitter exponential backoff that never waits less
than the provider's ``Retry-After``, capped in attempts and elapsed time. Every retry is
appended to the trial's retry log. A ``CallGate`` (the grid runner's shared rate limiter)
is asked before every attempt and told about every 429 once (the last attempt's too), so one
provider's limit is shared by every trial in the cluster. This module imports neither litellm nor Ray
(docs/design/043-retries-and-rate-limits.md).
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_after_delay
from tenacity.wait import wait_base

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504, 529})
RETRYABLE_KINDS = frozenset(
    {"RateLimitError", "APIConnectionError", "APITimeoutError", "Timeout", "InternalServerError",
     "ServiceUnavailableError", "ConnectError", "ReadTimeout", "TimeoutError", "ConnectionError"}
)  # fmt: skip
"""Exception class names retried even without a status (litellm/openai/httpx/builtin names)."""

NEVER_RETRY_KINDS = frozenset(
    {"BadRequestError", "ContextWindowExceededError", "AuthenticationError", "PermissionDeniedError",
     "NotFoundError", "UnprocessableEntityError", "ContentPolicyViolationError", "BudgetExceededError"}
)  # fmt: skip


QUOTA_MARKS = (
    "insufficient_quota", "exceeded your current quota", "credit balance is too low", "billing details",
    "insufficient funds", "payment required", "spend limit", "budget has been exceeded", "quota exceeded",
)  # fmt: skip
"""Words providers and gateways use when an account has run out of money or quota (OpenAI's 429
``insufficient_quota``, Anthropic's 400 "credit balance is too low", a proxy's spend cap)."""


QUOTA_KIND = "QuotaExhausted"
"""The fault kind a record names when the provider account is out of money or quota."""


def is_quota_error(exc: BaseException) -> bool:
    """True when the account, not the moment, is the problem: no retry can fix it, and every other
    trial of the provider would fail alike (the grid parks the provider instead: cluster/driver.py)."""
    if status_of(exc) == 402 or type(exc).__name__ == "BudgetExceededError":
        return True
    text = f"{exc} {getattr(exc, 'code', '') or ''} {getattr(exc, 'body', '') or ''}".lower()
    return any(mark in text for mark in QUOTA_MARKS)


@dataclass(frozen=True)
class RetryPolicy:
    """Caps and backoff of the retry layer.

    Attributes:
        max_attempts: Attempts per call, the first included.
        max_elapsed_s: Give up once this much time has passed since the first attempt.
        base_s: Full-jitter window of the first retry (doubles each retry).
        max_wait_s: Widest jitter window; a longer ``Retry-After`` is still honoured (up to ``max_elapsed_s``).
    """

    max_attempts: int = 8
    max_elapsed_s: float = 900.0
    base_s: float = 1.0
    max_wait_s: float = 60.0


class CallGate(Protocol):
    """What the retry layer asks before, and reports after, each provider attempt."""

    async def before_attempt(self) -> float:
        """Wait for the provider's rate limit; return the seconds waited."""
        ...

    async def rate_limited(self, retry_after_s: float | None, kind: str | None = None) -> None:
        """A 429 arrived: pause everyone's use of this provider (``kind``: the limit it names, if any)."""
        ...

    async def after_attempt(self, response: Any) -> None:
        """A successful attempt (for token accounting)."""
        ...


def status_of(exc: BaseException) -> int | None:
    """The HTTP status a provider exception carries, if any."""
    for holder in (exc, getattr(exc, "response", None)):
        status = getattr(holder, "status_code", None)
        if isinstance(status, int):
            return status
    return None


def is_retryable(exc: BaseException) -> bool:
    """True for faults a later attempt can fix (429, 5xx, timeouts, connection errors)."""
    kind = type(exc).__name__
    if kind in NEVER_RETRY_KINDS or is_quota_error(exc):
        return False
    status = status_of(exc)
    if status is not None:
        return status in RETRYABLE_STATUS
    return kind in RETRYABLE_KINDS or isinstance(exc, TimeoutError | ConnectionError)


def is_rate_limit(exc: BaseException) -> bool:
    """A 429 the gate must hear of: a rate limit, not an account out of quota (which no slower rate
    fixes: its provider is parked instead, and cutting the shared rate would slow nothing that helps)."""
    return status_of(exc) == 429 and not is_quota_error(exc)


_LIMIT_WORDS = (
    (re.compile(r"rate limit reached for (requests|tokens)"), None),  # the stand-in's and OpenAI's
    (re.compile(r"on (requests|tokens) per min"), None),  # OpenAI's "... on tokens per min (TPM)"
    (re.compile(r"(?:input|output)? ?tokens per minute"), "tokens"),  # Anthropic's
    (re.compile(r"requests per minute|number of requests"), "requests"),
)


def limit_kind(exc: BaseException) -> str | None:
    """Which limit a 429 names (``requests`` or ``tokens``), from its message; None when it does not
    say, and the gate then cuts both of its rates."""
    text = str(exc).lower()
    for pattern, kind in _LIMIT_WORDS:
        found = pattern.search(text)
        if found:
            return kind or found.group(1)
    return None


def retry_after_s(exc: BaseException, now: float | None = None) -> float | None:
    """Seconds the provider asked us to wait (``retry-after-ms``, ``retry-after`` seconds or HTTP date).

    litellm keeps the vendor headers on ``exc.response.headers`` for some routes and only on
    ``exc.litellm_response_headers`` for others (``anthropic/``, ``fireworks_ai/``, the Responses API:
    tests/models/test_retry_after_routes.py raises each route's own exception); ``exc.headers`` last.
    """
    sources = (
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "litellm_response_headers", None),
        getattr(exc, "headers", None),
    )
    for headers in sources:
        if not headers:
            continue
        if type(headers) is dict:  # a plain copy keeps the sender's case; header names have none
            headers = {str(k).lower(): v for k, v in headers.items()}
        try:
            millis = headers.get("retry-after-ms")
            if millis is not None:
                return max(0.0, float(millis) / 1000.0)
            value = headers.get("retry-after")
        except AttributeError:
            continue
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value)
            if parsed is None:
                continue
            return max(0.0, parsed.timestamp() - (now if now is not None else time.time()))
    return None


class wait_retry_after_or_jitter(wait_base):  # noqa: N801 - tenacity's naming
    """``max(Retry-After, full jitter)``; the jitter window is capped at ``max_wait_s``."""

    def __init__(self, policy: RetryPolicy, rng: random.Random | None = None) -> None:
        self.policy = policy
        self.rng = rng or random.Random()

    def __call__(self, retry_state: RetryCallState) -> float:
        window = min(self.policy.max_wait_s, self.policy.base_s * 2 ** (retry_state.attempt_number - 1))
        jitter = self.rng.uniform(0.0, window)
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        asked = retry_after_s(exc) if exc is not None else None
        # The provider's Retry-After is a floor, not subject to the jitter cap (only to the overall time cap).
        return max(jitter, min(asked or 0.0, self.policy.max_elapsed_s))


RetryHook = Callable[[Callable[[], Awaitable[Any]], list[dict[str, Any]]], Awaitable[Any]]
"""``hook(attempt, retry_log) -> response``: call ``attempt()`` (one provider call) as often as the
retry policy allows, append one dict per retry to ``retry_log`` (e.g. ``{"attempt", "error",
"status", "wait_s"}``), and re-raise the last litellm exception when giving up. The exception
keeps ``status_code`` and ``response.headers`` (``Retry-After``) for the policy to read."""


def retry_hook(
    policy: RetryPolicy | None = None,
    gate: CallGate | None = None,
    *,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    rng: random.Random | None = None,
) -> RetryHook:
    """Build the ``RetryHook`` the litellm adapter calls around each provider call.

    Args:
        policy: Caps and backoff (default ``RetryPolicy()``).
        gate: Shared rate limiter asked before each attempt; None for no limiter.
        sleep: Async sleep (tests pass a fake clock).
        rng: Jitter source (tests pass a seeded one).

    Returns:
        ``hook(attempt, retry_log)``: runs ``attempt`` until it succeeds, a non-retryable fault
        occurs, or the caps are reached (then the last exception is re-raised); one dict per
        retry (``attempt``, ``error``, ``status``, ``retry_after_s``, ``wait_s``, ``gate_wait_s``)
        is appended to ``retry_log``.
    """
    policy = policy or RetryPolicy()
    waiter = wait_retry_after_or_jitter(policy, rng)

    async def hook(attempt: Callable[[], Awaitable[Any]], retry_log: list[dict[str, Any]]) -> Any:
        gate_waits: list[float] = []

        async def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            assert exc is not None
            status, asked = status_of(exc), retry_after_s(exc)
            retry_log.append(
                {
                    "attempt": state.attempt_number,
                    "error": type(exc).__name__,
                    "status": status,
                    "retry_after_s": asked,
                    "wait_s": round(state.upcoming_sleep, 3),
                    "gate_wait_s": round(gate_waits[-1], 3) if gate_waits else 0.0,
                }
            )

        extra: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
        retrying = AsyncRetrying(
            stop=stop_after_attempt(policy.max_attempts) | stop_after_delay(policy.max_elapsed_s),
            wait=waiter,
            retry=retry_if_exception(is_retryable),
            before_sleep=before_sleep,
            reraise=True,
            **extra,
        )
        async for state in retrying:
            with state:
                if gate is not None:
                    gate_waits.append(await gate.before_attempt())
                try:
                    response = await attempt()
                except Exception as exc:
                    if gate is not None and is_rate_limit(exc):
                        # Here, not in before_sleep: the 429 that ends the call (the last attempt, or the
                        # time cap reached) is as much news about the limit as one that is retried.
                        await gate.rate_limited(retry_after_s(exc), limit_kind(exc))
                    raise
                if gate is not None:
                    await gate.after_attempt(response)
        return response

    return hook
