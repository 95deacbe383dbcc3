"""Anthropic's Message Batches API on the stand-in (``/v1/messages/batches``).

As Anthropic documents it: ``{requests: [{custom_id, params}]}`` makes a ``message_batch`` that is
``in_progress`` (``canceling`` after a cancel) until it ``ended``; then its results are one JSONL line
per request, ``succeeded`` with the message ``/v1/messages`` answers for those params (its
``usage.service_tier`` says ``batch``), ``errored``, ``expired`` or ``canceled``. The envelope is
checked when the batch is made (400 ``invalid_request_error``): ``custom_id`` 1-64 characters of
``[a-zA-Z0-9_-]``, unique in the batch, at most 100,000 requests, and each ``params`` a Messages
request by its schema (model, a non-empty ``messages`` list, an integer ``max_tokens``, no
streaming). What the Messages API refuses beyond its schema (broken tool loops, a forged thinking
signature: ``standin_anthropic.check_request``) comes back as that request's ``errored`` result,
because Anthropic validates each request's params asynchronously, when it is processed.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs

from apiflow.testing.standin_anthropic import error_body
from apiflow.testing.standin_batch_book import BatchBook, BatchJob, iso

Answer = tuple[int, dict[str, str], dict[str, Any] | bytes]

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MOST_REQUESTS = 100_000


def _refuse(message: str, status: int = 400, kind: str = "invalid_request_error") -> Answer:
    return status, {}, error_body(kind, message)


def _schema_error(index: int, item: Any, seen: set[str]) -> str | None:
    """The live API's 400 message for one request of the envelope, or None when it passes."""
    where = f"requests.{index}"
    if not isinstance(item, dict):
        return f"{where}: Input should be a valid dictionary"
    custom_id = item.get("custom_id")
    if not isinstance(custom_id, str):
        return f"{where}.custom_id: Field required"
    if not CUSTOM_ID.match(custom_id):
        return f"{where}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
    if custom_id in seen:
        return (
            f"{where}.custom_id: Duplicate custom_id '{custom_id}': custom_id must be unique within a batch"
        )
    seen.add(custom_id)
    params = item.get("params")
    if not isinstance(params, dict):
        return (
            f"{where}.params: Field required"
            if params is None
            else f"{where}.params: Input should be a valid dictionary"
        )
    if not isinstance(params.get("model"), str) or not params["model"]:
        return f"{where}.params.model: Field required"
    if not isinstance(params.get("messages"), list) or not params["messages"]:
        return f"{where}.params.messages: at least one message is required"
    if not isinstance(params.get("max_tokens"), int) or isinstance(params["max_tokens"], bool):
        return f"{where}.params.max_tokens: Field required"
    if params.get("stream"):
        return f"{where}.params.stream: streaming is not supported in Message Batches"
    return None


def create(book: BatchBook, raw: bytes, base: str) -> Answer:
    """``POST /v1/messages/batches``."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return _refuse("The request body is not valid JSON.")
    requests = body.get("requests") if isinstance(body, dict) else None
    if not isinstance(requests, list):
        return _refuse("requests: Field required")
    if not requests:
        return _refuse("requests: List should have at least 1 item after validation, not 0")
    if len(requests) > MOST_REQUESTS:
        return _refuse(
            f"requests: List should have at most {MOST_REQUESTS} items after validation, not {len(requests)}"
        )
    seen: set[str] = set()
    for index, item in enumerate(requests):
        message = _schema_error(index, item, seen)
        if message is not None:
            return _refuse(message)
    job = book.create("anthropic", "anthropic", "msgbatch_", [r["custom_id"] for r in requests],
                      [r["params"] for r in requests])  # fmt: skip
    return 200, {}, render(book, job, base)


def render(book: BatchBook, job: BatchJob, base: str) -> dict[str, Any]:
    """The ``message_batch`` object."""
    ended = job.ending is not None
    status = "ended" if ended else "canceling" if job.cancel_at is not None else "in_progress"
    return {
        "id": job.id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {
            "processing": len(job.bodies) - len(job.outcomes),
            "succeeded": job.count("succeeded"),
            "errored": job.count("errored"),
            "canceled": job.count("canceled"),
            "expired": job.count("expired"),
        },
        "ended_at": iso(book.unix(job, job.ended_at)),
        "created_at": iso(job.created_unix),
        "expires_at": iso(job.created_unix + job.expire_s),
        "archived_at": None,
        "cancel_initiated_at": iso(book.unix(job, job.cancel_at)),
        "results_url": f"{base}/v1/messages/batches/{job.id}/results" if ended else None,
    }


def results(job: BatchJob) -> bytes:
    """The results file: one JSONL line a request, in the batch's order."""
    lines = []
    for custom_id, outcome in zip(job.custom_ids, job.outcomes, strict=True):
        result: dict[str, Any] = {"type": outcome.kind}
        if outcome.kind == "succeeded" and outcome.body is not None:
            message = dict(outcome.body)
            message["usage"] = {**message["usage"], "service_tier": "batch"}
            result["message"] = message
        elif outcome.kind == "errored":
            failure = outcome.body or error_body("api_error", outcome.message or "Internal server error")
            result["error"] = {**failure, "request_id": outcome.request_id}
        lines.append(json.dumps({"custom_id": custom_id, "result": result}) + "\n")
    return "".join(lines).encode()


def answer(
    book: BatchBook, method: str, batch_id: str | None, action: str | None, query: str, raw: bytes, base: str
) -> Answer:
    """``/v1/messages/batches``: create, list, retrieve, results, cancel."""
    if batch_id is None:
        if method == "POST":
            return create(book, raw, base)
        args = parse_qs(query)
        try:
            limit = int(args.get("limit", ["20"])[0])
        except ValueError:
            limit = 0
        if not 1 <= limit <= 1000:
            return _refuse("limit: Input should be an integer from 1 to 1000")
        jobs, more = book.page(
            "anthropic", limit, args.get("after_id", [None])[0], args.get("before_id", [None])[0]
        )
        data = [render(book, job, base) for job in jobs]
        return 200, {}, {"data": data, "has_more": more, "first_id": data[0]["id"] if data else None,
                         "last_id": data[-1]["id"] if data else None}  # fmt: skip
    job = book.find("anthropic", batch_id)
    if job is None:
        return _refuse(f"Message batch not found: {batch_id}", 404, "not_found_error")
    if action == "/results":
        if job.ending is None:
            return _refuse(f"Message batch {batch_id} has not ended yet: its results are available once its "
                           "processing_status is 'ended'.")  # fmt: skip
        return 200, {"content-type": "application/x-jsonl"}, results(job)
    if action == "/cancel":
        if job.ending is not None:
            return _refuse(f"Message batch {batch_id} has already ended and cannot be canceled.")
        book.cancel(job)
    return 200, {}, render(book, job, base)
