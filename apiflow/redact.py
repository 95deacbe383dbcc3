"""Secrets never reach a record, a log line, a manifest or a report (docs/design/045-secrets-and-unscored.md).

What counts as a secret here is a credential *of the harness's operator*:

* the value of any environment variable whose name says it is a credential (``OPENAI_API_KEY``,
  ``ANTHROPIC_API_KEY``, ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``*_PASSWORD`` ...; see
  ``is_secret_name``), and the credential-named values of a model's transport params (``api_key``,
  ``aws_secret_access_key``) and every header value it sends (``extra_headers``/``headers``, whatever
  the header's name: a custom ``X-…`` header carries keys as often as ``Authorization`` does), in
  plain, URL-encoded and base64 forms;
* whatever *looks* like one in provider text even when we never saw its value: the value of an
  ``Authorization`` / ``x-api-key`` / ``api-key`` header, a ``Bearer …`` token, an ``sk-…`` key,
  an AWS access key id, a ``key=`` / ``token=`` query parameter.

It is applied to provider *error* text at the litellm adapter's exception boundary, to every error
text a trial records from any model or agent (``apiflow.agent.loop.harness_error_text``: plug-ins,
external agents), and to the log records of litellm's loggers and the trial loop's. It is never
applied to trial transcripts: the mock tokens, client
secrets and ``Bearer`` headers a world hands the agent are task data the grader reads, minted by
the world from the trial seed, not secrets from the environment.
"""

from __future__ import annotations

import base64
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[REDACTED]"

MIN_SECRET_LENGTH = 8
"""Shorter values are not credible credentials (``foo``, ``1``, ``true``): replacing them everywhere
would mangle ordinary text, and a real provider key is never this short."""

_SECRET_WORDS = frozenset(
    {"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIAL", "CREDENTIALS",
     "AUTH", "AUTHORIZATION", "BEARER", "SIGNATURE", "COOKIE"}
)  # fmt: skip
"""A name with one of these words (split on ``_``/``-``) names a credential."""

_NOT_SECRET_SUFFIXES = ("_FILE", "_PATH", "_DIR", "_SOCK", "_ID_FILE", "_URL_PATH")
"""...unless it names where a credential lives, not the credential (``SSH_AUTH_SOCK``, ``*_KEY_FILE``)."""

_HEADER_PARAMS = frozenset({"extra_headers", "headers"})
"""Params whose every value is a header the model sends: all of them count as secrets."""

SECRETS_ATTR = "redact_also"
"""A log record attribute (``logger.exception(..., extra={SECRETS_ATTR: values})``) naming more
values ``RedactingFilter`` removes: a model's params' secrets, which no process-wide filter knows."""

_HEADER_NAMES = r"authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key|openai-api-key|anthropic-api-key"

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # A credential header, as HTTP text, JSON or a Python repr: keep the name, drop the value
    # (with its auth scheme: ``Authorization: Bearer abc`` -> ``Authorization: [REDACTED]``).
    (
        re.compile(
            rf"(?i)(\b(?:{_HEADER_NAMES})[\"']?\s*[:=]\s*[\"']?)"
            r"(?:(?:bearer|basic|token|apikey)\s+)?[^\s\"',;}}\[\]]+"
        ),
        r"\1" + REDACTED,
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (
        re.compile(r"(?i)([?&](?:api[-_]?key|key|token|access_token|auth|sig|signature)=)[^&\s\"'#]+"),
        r"\1" + REDACTED,
    ),
)


def is_secret_name(name: str) -> bool:
    """True when an environment variable or parameter name says its value is a credential."""
    upper = name.upper()
    if upper.endswith(_NOT_SECRET_SUFFIXES) or upper in ("PWD", "OLDPWD"):
        return False
    words = [w for w in re.split(r"[_\-.]+", upper) if w]
    return any(w in _SECRET_WORDS for w in words) or "APIKEY" in upper.replace("_", "")


def secret_values(environ: Mapping[str, str] | None = None) -> set[str]:
    """Values of the credential-named environment variables (read now, never cached)."""
    env = os.environ if environ is None else environ
    return {v for k, v in env.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH}


def secrets_in(params: Any, *, under_secret: bool = False) -> set[str]:
    """Credential values inside a (nested) mapping such as a model's transport params.

    A string counts when its own key, or a key above it, is credential-named (``api_key``,
    ``extra_headers: {Authorization: ...}``, ``aws_secret_access_key``), and every value under
    ``extra_headers``/``headers`` counts whatever its header name (``X-Custom: <key>``).
    """
    found: set[str] = set()
    if isinstance(params, Mapping):
        for key, value in params.items():
            secret = under_secret or is_secret_name(str(key)) or str(key).lower() in _HEADER_PARAMS
            found |= secrets_in(value, under_secret=secret)
    elif isinstance(params, list | tuple):
        for value in params:
            found |= secrets_in(value, under_secret=under_secret)
    elif isinstance(params, str) and under_secret and len(params) >= MIN_SECRET_LENGTH:
        found.add(params)
    return found


def credential_keys(params: Any, path: str = "") -> list[str]:
    """Dotted paths of the credential-named keys inside a (nested) mapping, whatever their values."""
    found: list[str] = []
    if isinstance(params, Mapping):
        for key, value in params.items():
            where = f"{path}.{key}" if path else str(key)
            found += [where] if is_secret_name(str(key)) else credential_keys(value, where)
    return found


def _base64_cores(value: bytes) -> set[str]:
    """Substrings every base64 encoding of ``value`` contains, whatever bytes surround it.

    base64 works in 3-byte groups, so ``value`` encodes differently at each of the three offsets it
    can start at inside a longer blob (``user:key`` in a Basic header); the characters that also
    carry bits of the neighbouring bytes are cut off.
    """
    cores: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + value).decode().rstrip("=")
        head = math.ceil(8 * offset / 6)  # characters holding bits of the bytes before
        end = len(encoded) - (1 if (offset + len(value)) % 3 else 0)  # ... and of the bytes after
        core = encoded[head:end]
        cores |= {core, core.replace("+", "-").replace("/", "_")}
    return cores


def encoded_forms(value: str) -> set[str]:
    """``value`` as it may appear in text: plain, URL-encoded and base64 (standard and URL-safe)."""
    forms = {value, quote(value, safe=""), quote_plus(value, safe="")}
    forms |= _base64_cores(value.encode())
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every known secret (environment + ``extra``) and every credential-shaped string replaced.

    Known values go first, longest first, so a key that contains another is removed whole; the
    patterns then catch credentials we were never told about.
    """
    known = secret_values() | {v for v in extra if len(v) >= MIN_SECRET_LENGTH}
    forms = sorted({f for v in known for f in encoded_forms(v)}, key=len, reverse=True)
    if forms:
        text = re.sub("|".join(map(re.escape, forms)), REDACTED, text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def record_secrets(record: logging.LogRecord) -> tuple[str, ...]:
    """The extra values a log record asks to have redacted (``SECRETS_ATTR``), strings only."""
    values = getattr(record, SECRETS_ATTR, ())
    if not isinstance(values, Iterable) or isinstance(values, str | bytes):
        return ()
    return tuple(v for v in values if isinstance(v, str))


class RedactingFilter(logging.Filter):
    """A logging filter that redacts a record's message and traceback before any handler sees it
    (the environment's secrets, the record's ``SECRETS_ATTR`` values, credential shapes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place; never drops it."""
        extra = record_secrets(record)
        record.msg, record.args = redact(record.getMessage(), extra), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, extra)
        return True
