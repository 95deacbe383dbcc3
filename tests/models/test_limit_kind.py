"""Which limit a 429 names, so the gate cuts only that rate (``apiflow.models.retry.limit_kind``)."""

from __future__ import annotations

import pytest

from apiflow.models.retry import limit_kind


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Rate limit reached for requests (stand-in)", "requests"),
        ("Rate limit reached for tokens", "tokens"),
        ("Rate limit reached for gpt-5-mini in organization org-x on tokens per min (TPM): Limit 30000", "tokens"),
        ("Rate limit reached for gpt-5-mini in organization org-x on requests per min (RPM): Limit 500", "requests"),
        ("This request would exceed the rate limit for your organization of 40,000 input tokens per minute", "tokens"),
        ("This request would exceed your organization's rate limit of 50 requests per minute", "requests"),
        ("Too Many Requests", None),
    ],
)
def test_a_429_names_its_limit_or_says_nothing(message: str, kind: str | None) -> None:
    assert limit_kind(RuntimeError(message)) == kind
