"""Provider faults as the litellm adapter records them: classified, redacted, cut to size.

This is the single point where provider text becomes ours: every exception leaving the adapter's
``generate`` carries a message redacted by ``apiflow.redact`` (environment keys, the client's own
``api_key``/headers, credential-shaped strings) and no chained original
(docs/design/045-secrets-and-unscored.md). Imports no litellm: litellm's provider exceptions all
derive from openai's base error, which is what tells a provider fault from a harness bug here.
"""

from __future__ import annotations

import traceback
from typing import Any

from apiflow.models.base import ProviderError
from apiflow.models.retry import QUOTA_KIND, is_quota_error
from apiflow.redact import redact

MESSAGE_LIMIT = 2000
"""Characters of a provider error kept on the trial (after redaction, so no secret is cut in half)."""


class LiteLLMProviderError(ProviderError):
    """A provider fault as litellm reported it.

    Attributes:
        status_code: HTTP status when the provider answered (429, 5xx, ...), else None.
        kind: litellm's exception class name (``RateLimitError``, ``APIConnectionError``, ...).
    """

    def __init__(
        self, message: str, retries: tuple[dict[str, Any], ...], status_code: int | None, kind: str
    ) -> None:
        super().__init__(message, retries)
        self.status_code = status_code
        self.kind = kind


class LiteLLMHarnessFault(RuntimeError):
    """A non-provider exception raised inside the adapter (a harness bug), with its text redacted.

    The trial records it as ``harness_error``; the redacted original traceback rides along as an
    exception note, so the loop's log line still shows where it happened.
    """


def provider_faults() -> type[Exception]:
    """The base class of every litellm provider exception (rate limit, 5xx, connection, timeout, bad
    request, context window): openai's base error. Anything else raised in the adapter is a harness bug."""
    import openai

    return openai.OpenAIError


def provider_error(
    exc: Exception, retry_log: list[dict[str, Any]], secrets: frozenset[str] = frozenset()
) -> LiteLLMProviderError:
    """THE point where a provider fault is recorded: its text redacted, then cut to ``MESSAGE_LIMIT``.

    Raise it ``from None``: the original exception (its message and response body may quote the
    request's credentials) must not ride along into a logged traceback. The retry log needs no
    redaction: it holds exception class names, statuses and numbers only (models/retry.py).
    """
    status = getattr(exc, "status_code", None)
    quota = is_quota_error(exc)
    return LiteLLMProviderError(
        (QUOTA_KIND + ": " if quota else "") + fault_text(exc, secrets),
        tuple(retry_log),
        status if isinstance(status, int) else None,
        QUOTA_KIND if quota else type(exc).__name__,
    )


def fault_text(exc: Exception, secrets: frozenset[str]) -> str:
    """A provider exception's text as a record may hold it: redacted, then cut to ``MESSAGE_LIMIT``."""
    return redact(f"{type(exc).__name__}: {exc}", secrets)[:MESSAGE_LIMIT]


def harness_fault(exc: Exception, secrets: frozenset[str] = frozenset()) -> LiteLLMHarnessFault:
    """A harness bug's exception, its text and traceback redacted (raise it ``from None``)."""
    fault = LiteLLMHarnessFault(fault_text(exc, secrets))
    fault.add_note(
        "original traceback (redacted):\n" + redact("".join(traceback.format_exception(exc)), secrets)
    )
    return fault
