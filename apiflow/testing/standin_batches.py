"""The stand-in's batch tier: OpenAI's Batch + Files APIs and Anthropic's Message Batches, over HTTP.

So apiflow can run agent turns at the batch price against the stand-in as against the providers:

========================================  ==========================================================
``POST /v1/files``                         upload (multipart, ``purpose`` + ``file``) -> file object
``GET /v1/files[/{id}[/content]]``         the file objects / one / its bytes
``POST /v1/batches``                       ``{input_file_id, endpoint, completion_window, metadata}``
``GET /v1/batches[?limit=&after=]``        newest first: ``data``, ``has_more``, ``first_id``, ``last_id``
``GET /v1/batches/{id}``, ``POST …/cancel``  the Batch object
``POST /v1/messages/batches``              ``{requests: [{custom_id, params}]}`` -> ``message_batch``
``GET /v1/messages/batches[?limit=&after_id=&before_id=]``  newest first
``GET /v1/messages/batches/{id}[/results]``, ``POST …/cancel``  the batch / its JSONL results
========================================  ==========================================================

Every request of a batch is answered by the synchronous endpoints' own code
(``StandinProvider.answer``), so a batch answer is the synchronous answer for the same body, and
billed on the stats' ``batch`` tier; ``paid_twice`` counts ``custom_id``s answered in more than one
batch. Timing (``batch_latency_s``, ``batch_expire_s``) and per-request failures (``p_batch_fail``)
come from ``StandinConfig``; the state is ``standin_batch_book.BatchBook``, the shapes are
``standin_batches_openai`` and ``standin_batches_anthropic``.
"""

from __future__ import annotations

import re
import time
from typing import Any

from apiflow.testing import standin_batches_anthropic as anthropic_batches
from apiflow.testing import standin_batches_openai as openai_batches
from apiflow.testing.standin_anthropic import error_body as anthropic_error
from apiflow.testing.standin_batch_book import BatchBook
from apiflow.testing.standin_openai import error_body as openai_error

Answer = tuple[int, dict[str, str], dict[str, Any] | bytes]

ANTHROPIC = re.compile(r"/v1/messages/batches(?:/(?P<id>[^/]+)(?P<action>/results|/cancel)?)?$")
FILES = re.compile(r"/v1/files(?:/(?P<id>[^/]+)(?P<action>/content)?)?$")
BATCHES = re.compile(r"/v1/batches(?:/(?P<id>[^/]+)(?P<action>/cancel)?)?$")
ROUTES = (("anthropic", ANTHROPIC), ("files", FILES), ("batches", BATCHES))


def _methods(batch_id: str | None, action: str | None) -> tuple[str, ...]:
    """The methods a batch route takes: collections list and create, an object is read, actions vary."""
    if batch_id is None:
        return ("GET", "POST")
    if action in ("/cancel",):
        return ("POST",)
    return ("GET",)


def route(book: BatchBook, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer | None:
    """The answer to a batch-tier request, or None when ``target`` is not one of their routes."""
    path, _, query = target.partition("?")
    path = path.rstrip("/")
    matches = ((wire, pattern.search(path)) for wire, pattern in ROUTES)
    wire, found = next(((w, f) for w, f in matches if f is not None), ("", None))
    if found is None:
        return None
    batch_id, action = found.group("id"), found.group("action")
    if method not in _methods(batch_id, action):
        error = anthropic_error if wire == "anthropic" else openai_error
        return 405, {}, error("invalid_request_error", f"{method} is not allowed on {path}")
    if wire == "anthropic":
        base = f"http://{headers.get('host', '127.0.0.1')}"
        return anthropic_batches.answer(book, method, batch_id, action, query, raw, base)
    if wire == "batches":
        return openai_batches.batch_answer(book, method, batch_id, action, query, raw)
    if batch_id is None:
        if method == "GET":
            return openai_batches.list_files(book)
        return openai_batches.upload(book, headers, raw, int(time.time()))
    return openai_batches.file_answer(book, batch_id, action == "/content")
