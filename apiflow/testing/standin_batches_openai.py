"""OpenAI's Files API and Batch API on the stand-in (``/v1/files``, ``/v1/batches``).

As OpenAI documents them: a JSONL file uploaded with ``purpose=batch`` (multipart), a batch over it
for one endpoint (``/v1/chat/completions`` or ``/v1/responses`` here) with ``completion_window``
``24h``; the batch goes ``validating`` -> ``in_progress`` -> ``completed`` (or ``expired``,
``cancelling`` -> ``cancelled``), then an output file of the 200 answers and an error file of the
rest. A request body the API refuses outright gets a 400 (404 for an object it does not hold); an
input file whose lines are wrong makes a batch that ``failed`` with ``errors.data`` (code, line,
param, message), as OpenAI reports bad lines. Each output line's ``response.body`` is exactly what the
synchronous endpoint answers for that body (OpenAI documents no ``service_tier`` for batch bodies,
so none is added; the tier is in the stand-in's stats).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any
from urllib.parse import parse_qs

from apiflow.testing.standin_batch_book import BatchBook, BatchJob
from apiflow.testing.standin_openai import error_body

Answer = tuple[int, dict[str, str], dict[str, Any] | bytes]

ENDPOINTS = {"/v1/chat/completions": "openai", "/v1/responses": "responses"}
"""Batch endpoints the stand-in serves -> its wire (OpenAI's others have no offline model to play)."""
PURPOSES = ("assistants", "batch", "fine-tune", "vision", "user_data", "evals")
MOST_LINES = 50_000
MOST_BYTES = 200 * 2**20
SERVER_ERROR = "The server had an error while processing your request. Sorry about that!"


def _refuse(message: str, status: int = 400, param: str | None = None) -> Answer:
    body = error_body("invalid_request_error", message)
    body["error"]["param"] = param
    return status, {}, body


def parse_multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """``multipart/form-data`` fields: name -> (file name or None, bytes), exact to the byte."""
    found = re.search(r'boundary="?([^";]+)"?', content_type)
    if not content_type.startswith("multipart/form-data") or found is None:
        raise ValueError("not multipart/form-data")
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in raw.split(b"--" + found.group(1).encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, data = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        disposition = next(
            (
                line
                for line in head.decode("latin-1").split("\r\n")
                if line.lower().startswith("content-disposition")
            ),
            "",
        )
        name = re.search(r'(?:^|;)\s*name="([^"]*)"', disposition.partition(":")[2])
        filename = re.search(r'filename="([^"]*)"', disposition)
        if name is not None:
            fields[name.group(1)] = (filename.group(1) if filename else None, data.removesuffix(b"\r\n"))
    return fields


def _store(book: BatchBook, filename: str, purpose: str, content: bytes, created: int) -> dict[str, Any]:
    item: dict[str, Any] = {"id": book.mint("file-"), "object": "file", "bytes": len(content), "created_at": created,
            "filename": filename, "purpose": purpose, "status": "processed", "expires_at": None,
            "status_details": None}  # fmt: skip
    with book.lock:
        book.files[item["id"]] = item | {"content": content}
    return item


def upload(book: BatchBook, headers: dict[str, str], raw: bytes, now: int) -> Answer:
    """``POST /v1/files``."""
    try:
        fields = parse_multipart(headers.get("content-type", ""), raw)
    except ValueError:
        return _refuse("The request must be multipart/form-data with 'file' and 'purpose'.")
    if "file" not in fields or fields["file"][0] is None:
        return _refuse("Missing required parameter: 'file'.", param="file")
    purpose = fields.get("purpose", (None, b""))[1].decode("utf-8", "replace")
    if purpose not in PURPOSES:
        return _refuse(f"Invalid value for 'purpose': '{purpose}'.", param="purpose")
    filename, content = fields["file"][0] or "", fields["file"][1]
    if purpose == "batch" and not filename.endswith(".jsonl"):
        return _refuse("Invalid file format for Batch API. Must be .jsonl", param="file")
    if len(content) > MOST_BYTES:
        return _refuse(f"File is too large: {len(content)} bytes (at most {MOST_BYTES}).", param="file")
    return 200, {}, _store(book, filename, purpose, content, now)


def file_answer(book: BatchBook, file_id: str, content: bool) -> Answer:
    """``GET /v1/files/{id}`` (the object) and ``GET /v1/files/{id}/content`` (its bytes)."""
    with book.lock:
        item = book.files.get(file_id)
    if item is None:
        return _refuse(f"No such File object: {file_id}", 404, "id")
    if content:
        return 200, {"content-type": "application/octet-stream"}, item["content"]
    return 200, {}, {k: v for k, v in item.items() if k != "content"}


def list_files(book: BatchBook) -> Answer:
    """``GET /v1/files``: every file, newest first (uploads and batch output alike)."""
    with book.lock:
        data = [{k: v for k, v in item.items() if k != "content"} for item in reversed(book.files.values())]
    return 200, {}, {"object": "list", "data": data, "has_more": False}


def _line_error(code: str, line: int | None, message: str, param: str | None = None) -> dict[str, Any]:
    return {"code": code, "line": line, "message": message, "param": param}


def read_lines(
    content: bytes, endpoint: str
) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]], str | None]:
    """``(custom_ids, bodies, errors, model)`` of a batch input file, checked as OpenAI checks it."""
    ids: list[str] = []
    bodies: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    model: str | None = None
    lines = [
        (n, text) for n, text in enumerate(content.decode("utf-8", "replace").split("\n"), 1) if text.strip()
    ]
    if not lines:
        return [], [], [_line_error("empty_file", None, "The batch input file is empty.")], None
    if len(lines) > MOST_LINES:
        message = f"The batch input file has {len(lines)} requests; at most {MOST_LINES} are allowed."
        return [], [], [_line_error("too_many_tasks", None, message)], None
    for number, text in lines:
        try:
            item = json.loads(text)
        except ValueError:
            item = None
        if not isinstance(item, dict):
            errors.append(
                _line_error("invalid_json_line", number, "This line is not parseable as valid JSON.")
            )
            continue
        custom_id, body = item.get("custom_id"), item.get("body")
        if not isinstance(custom_id, str) or not custom_id:
            errors.append(
                _line_error("missing_required_parameter", number, "Missing 'custom_id'.", "custom_id")
            )
        elif custom_id in ids:
            errors.append(_line_error("duplicate_custom_id", number, "The custom_id for this request is a "
                                      "duplicate of another request. The custom_id parameter must be unique "
                                      "for each request in a batch.", "custom_id"))  # fmt: skip
        if item.get("method") != "POST":
            errors.append(
                _line_error("invalid_method", number, "Only the POST method is supported.", "method")
            )
        if item.get("url") != endpoint:
            errors.append(_line_error("url_mismatch", number, f"The provided URL '{item.get('url')}' does not "
                                      f"match the endpoint of the batch '{endpoint}'.", "url"))  # fmt: skip
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            errors.append(
                _line_error("missing_required_parameter", number, "Missing 'body.model'.", "body.model")
            )
        elif model is None:
            model = body["model"]
        elif body["model"] != model:
            errors.append(_line_error("model_mismatch", number, f"The provided model '{body['model']}' does not "
                                      f"match the model '{model}' of the other requests. All requests in a "
                                      "batch must use the same model.", "body.model"))  # fmt: skip
        ids.append(custom_id if isinstance(custom_id, str) else "")
        bodies.append(body if isinstance(body, dict) else {})
    return ids, bodies, errors, model


def create(book: BatchBook, raw: bytes) -> Answer:
    """``POST /v1/batches``."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return _refuse("We could not parse the JSON body of your request.")
    if not isinstance(body, dict):
        return _refuse("The body of your request must be a JSON object.")
    for name in ("input_file_id", "endpoint", "completion_window"):
        if not isinstance(body.get(name), str):
            return _refuse(f"Missing required parameter: '{name}'.", param=name)
    if body["completion_window"] != "24h":
        return _refuse(f"Invalid value for 'completion_window': '{body['completion_window']}'. Supported "
                       "values are: '24h'.", param="completion_window")  # fmt: skip
    endpoint = body["endpoint"]
    if endpoint not in ENDPOINTS:
        return _refuse(f"Invalid value for 'endpoint': '{endpoint}'. Supported values are: "
                       f"{', '.join(map(repr, ENDPOINTS))}.", param="endpoint")  # fmt: skip
    metadata = body.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, dict) and len(metadata) <= 16
        and all(isinstance(k, str) and len(k) <= 64 and isinstance(v, str) and len(v) <= 512
                for k, v in metadata.items())
    ):  # fmt: skip
        return _refuse("Invalid 'metadata': at most 16 string pairs, keys up to 64 and values up to 512 "
                       "characters.", param="metadata")  # fmt: skip
    with book.lock:
        source = book.files.get(body["input_file_id"])
    if source is None:
        return _refuse(f"No such File object: {body['input_file_id']}", 404, "input_file_id")
    if source["purpose"] != "batch":
        return _refuse(f"The input file must be uploaded with purpose 'batch', not '{source['purpose']}'.",
                       param="input_file_id")  # fmt: skip
    ids, bodies, errors, model = read_lines(source["content"], endpoint)
    job = book.create(
        "openai", ENDPOINTS[endpoint], "batch_", [] if errors else ids, [] if errors else bodies
    )
    job.info = {"endpoint": endpoint, "input_file_id": source["id"], "metadata": metadata, "model": model,
                "output_file_id": None, "error_file_id": None}  # fmt: skip
    job.on_end = lambda ended: _write_files(book, ended)
    if errors:
        book.fail(job, errors)
    return 200, {}, render(book, job, "validating")


def _line_id(job: BatchJob, custom_id: str) -> str:
    return "batch_req_" + hashlib.sha256(f"{job.id}|{custom_id}".encode()).hexdigest()[:32]


def _write_files(book: BatchBook, job: BatchJob) -> None:
    """The output file (200 answers) and the error file (the rest), as the batch ends."""
    done: list[str] = []
    failed: list[str] = []
    for custom_id, outcome in zip(job.custom_ids, job.outcomes, strict=True):
        line: dict[str, Any] = {
            "id": _line_id(job, custom_id),
            "custom_id": custom_id,
            "response": None,
            "error": None,
        }
        if outcome.kind in ("succeeded", "errored"):
            answer = outcome.body or error_body("server_error", outcome.message or SERVER_ERROR)
            line["response"] = {
                "status_code": outcome.status,
                "request_id": outcome.request_id,
                "body": answer,
            }
        elif outcome.kind == "expired":
            line["error"] = {"code": "batch_expired",
                             "message": "This request could not be executed before the completion window expired."}  # fmt: skip
        else:
            line["error"] = {"code": "batch_cancelled",
                             "message": "This request was not executed because the batch was cancelled."}  # fmt: skip
        (done if outcome.kind == "succeeded" else failed).append(json.dumps(line) + "\n")
    ended = int(book.unix(job, job.ended_at) or job.created_unix)
    for key, suffix, lines in (("output_file_id", "output", done), ("error_file_id", "error", failed)):
        if lines:
            filename = f"{job.id}_{suffix}.jsonl"
            job.info[key] = _store(book, filename, "batch_output", "".join(lines).encode(), ended)["id"]


def _usage(job: BatchJob) -> dict[str, Any]:
    """Tokens of the batch's 200 answers, in the Batch object's ``usage`` shape."""
    tokens = {"input": 0, "cached": 0, "output": 0, "reasoning": 0}
    for outcome in job.outcomes:
        usage = (outcome.body or {}).get("usage") if outcome.kind == "succeeded" else None
        if not usage:
            continue
        chat = "prompt_tokens" in usage
        tokens["input"] += usage["prompt_tokens" if chat else "input_tokens"]
        tokens["cached"] += usage["prompt_tokens_details" if chat else "input_tokens_details"][
            "cached_tokens"
        ]
        tokens["output"] += usage["completion_tokens" if chat else "output_tokens"]
        tokens["reasoning"] += usage["completion_tokens_details" if chat else "output_tokens_details"][
            "reasoning_tokens"
        ]
    return {"input_tokens": tokens["input"], "input_tokens_details": {"cached_tokens": tokens["cached"]},
            "output_tokens": tokens["output"], "output_tokens_details": {"reasoning_tokens": tokens["reasoning"]},
            "total_tokens": tokens["input"] + tokens["output"]}  # fmt: skip


def render(book: BatchBook, job: BatchJob, status: str | None = None) -> dict[str, Any]:
    """The Batch object (``status`` overrides the state: the create answer says ``validating``)."""
    ending = job.ending
    if status is None:
        status = ending or ("cancelling" if job.cancel_at is not None else "in_progress")

    def at(job: BatchJob, instant: float | None) -> int | None:
        unix = book.unix(job, instant)
        return None if unix is None else int(unix)

    created = int(job.created_unix)
    running = status not in ("validating", "failed")
    return {
        "id": job.id, "object": "batch", "endpoint": job.info["endpoint"], "model": job.info["model"],
        "errors": {"object": "list", "data": job.errors} if job.errors and status == "failed" else None,
        "input_file_id": job.info["input_file_id"], "completion_window": "24h", "status": status,
        "output_file_id": job.info["output_file_id"], "error_file_id": job.info["error_file_id"],
        "created_at": created, "in_progress_at": created if running else None,
        "expires_at": int(job.created_unix + job.expire_s),
        "finalizing_at": at(job, job.ended_at) if ending in ("completed", "expired") else None,
        "completed_at": at(job, job.ended_at) if ending == "completed" else None,
        "failed_at": created if status == "failed" else None,
        "expired_at": at(job, job.ended_at) if ending == "expired" else None,
        "cancelling_at": at(job, job.cancel_at), "cancelled_at": at(job, job.ended_at) if ending == "cancelled" else None,
        "request_counts": {"total": len(job.bodies) if running else 0, "completed": job.count("succeeded"),
                           "failed": job.count("errored")},
        "metadata": job.info["metadata"], "usage": _usage(job),
    }  # fmt: skip


def batch_answer(
    book: BatchBook, method: str, batch_id: str | None, action: str | None, query: str, raw: bytes
) -> Answer:
    """``/v1/batches``: create, list, retrieve, cancel."""
    if batch_id is None:
        if method == "POST":
            return create(book, raw)
        args = parse_qs(query)
        try:
            limit = int(args.get("limit", ["20"])[0])
        except ValueError:
            limit = 0
        if not 1 <= limit <= 100:
            return _refuse("Invalid 'limit': an integer from 1 to 100.", param="limit")
        jobs, more = book.page("openai", limit, args.get("after", [None])[0])
        data = [render(book, job) for job in jobs]
        return 200, {}, {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                         "last_id": data[-1]["id"] if data else None, "has_more": more}  # fmt: skip
    job = book.find("openai", batch_id)
    if job is None:
        return _refuse(f"No batch found with id '{batch_id}'.", 404, "batch_id")
    if action is None:
        return 200, {}, render(book, job)
    if job.ending is not None:
        return _refuse(f"Cannot cancel a batch with status '{render(book, job)['status']}'.")
    book.cancel(job)
    return 200, {}, render(book, job)
