"""Quota and billing faults are not rate limits: named, never retried (litellm's own exception types)."""

from __future__ import annotations

import httpx
import pytest

from apiflow.models.litellm_client import _litellm
from apiflow.models.retry import is_quota_error, is_retryable

litellm = _litellm()  # configured first: the bundled cost map, no fetch


def _response(status: int) -> httpx.Response:
    return httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"))


QUOTA = [
    litellm.RateLimitError(  # OpenAI: a 429 whose code says the plan, not the moment, is spent
        "OpenAIException - You exceeded your current quota, please check your plan and billing details.",
        llm_provider="openai", model="gpt-5-mini", response=_response(429),
    ),
    litellm.BadRequestError(  # Anthropic: a 400
        "AnthropicException - Your credit balance is too low to access the Anthropic API.",
        model="claude-sonnet-4-6", llm_provider="anthropic", response=_response(400),
    ),
    litellm.BudgetExceededError(current_cost=12.0, max_budget=10.0),  # a gateway's spend cap
]  # fmt: skip

NOT_QUOTA = [
    litellm.RateLimitError("Rate limit reached for requests", llm_provider="openai", model="gpt-5-mini",
                           response=_response(429)),  # fmt: skip
    litellm.InternalServerError("overloaded", llm_provider="anthropic", model="claude-sonnet-4-6"),
]


@pytest.mark.parametrize("exc", QUOTA, ids=lambda e: type(e).__name__)
def test_an_empty_account_is_a_quota_fault_and_never_retried(exc: Exception) -> None:
    assert is_quota_error(exc) and not is_retryable(exc)


@pytest.mark.parametrize("exc", NOT_QUOTA, ids=lambda e: type(e).__name__)
def test_a_rate_limit_stays_a_rate_limit(exc: Exception) -> None:
    assert not is_quota_error(exc) and is_retryable(exc)
