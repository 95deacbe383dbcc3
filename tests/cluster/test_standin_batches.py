"""The stand-in's batch tier (apiflow/testing/standin_batches.py): OpenAI's Files + Batch API and
Anthropic's Message Batches over real HTTP on 127.0.0.1, a server per test.

Each batch answer must equal the synchronous endpoint's answer for the same body; the refusals, the
expiry, the cancel, the injected failures, the list pages and the per-tier bill are checked here,
and the litellm functions that drive the batch tier are run against it.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.testing.standin_batch_book import unit
from apiflow.testing.standin_server import StandinConfig, StandinServer

CHAT = "/v1/chat/completions"


def call(
    method: str, url: str, body: Any = None, raw: bytes | None = None, kind: str = "application/json"
) -> tuple[int, Any]:
    """``(status, parsed JSON or bytes)`` of one request."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"content-type": kind}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as err:
        status, payload = err.code, err.read()
    try:
        return status, json.loads(payload)
    except ValueError:
        return status, payload


def upload(url: str, content: bytes, purpose: str = "batch", filename: str = "in.jsonl") -> tuple[int, Any]:
    """``POST /v1/files`` as multipart/form-data, as the OpenAI SDK sends it."""
    edge = "standin-edge-7f"
    raw = (
        (
            f'--{edge}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n{purpose}\r\n'
            f'--{edge}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{edge}--\r\n".encode()
    )
    return call("POST", f"{url}/files", raw=raw, kind=f"multipart/form-data; boundary={edge}")


def jsonl(lines: list[Any]) -> bytes:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()


def line(custom_id: str, body: dict[str, Any], url: str = CHAT, method: str = "POST") -> dict[str, Any]:
    return {"custom_id": custom_id, "method": method, "url": url, "body": body}


@pytest.fixture(scope="module")
def bodies() -> dict[str, dict[str, Any]]:
    """One opening request per wire, for two tasks (their answers differ)."""
    bank = load_bank(DEFAULT_BANK)
    found: dict[str, dict[str, Any]] = {}
    for name in ("sample-w01-sub01", "sample-w01-sub02"):
        system, user = initial_messages(bank.task(name))
        found[f"chat:{name}"] = {"model": "apiflow/oracle", "messages": [system, user]}
        found[f"responses:{name}"] = {"model": "apiflow/oracle", "instructions": system["content"],
                                      "input": [{"role": "user", "content": user["content"]}]}  # fmt: skip
        found[f"messages:{name}"] = {"model": "apiflow/oracle", "max_tokens": 1024, "system": system["content"],
                                     "messages": [{"role": "user", "content": user["content"]}]}  # fmt: skip
    return found


@contextmanager
def serving(**config: Any) -> Iterator[tuple[StandinServer, str, str]]:
    """A stand-in for one test: ``(server, OpenAI base .../v1, root)``."""
    server = StandinServer(StandinConfig(**config))
    url = server.start()
    try:
        yield server, url, server.root
    finally:
        server.stop()


class Clock:
    """The batch book's clock, moved by hand (a cancel or an expiry exactly between two requests)."""

    def __init__(self, server: StandinServer) -> None:
        self.now = 1000.0
        server.provider.batches.clock = lambda: self.now


def openai_batch(url: str, lines: list[Any], endpoint: str = CHAT, **extra: Any) -> dict[str, Any]:
    status, item = upload(url, jsonl(lines))
    assert status == 200, item
    status, batch = call("POST", f"{url}/batches", {"input_file_id": item["id"], "endpoint": endpoint,
                                                    "completion_window": "24h", **extra})  # fmt: skip
    assert status == 200 and batch["status"] == "validating", batch
    return batch


def wait_openai(url: str, batch_id: str, seen: set[str] | None = None) -> dict[str, Any]:
    for _ in range(400):
        batch = call("GET", f"{url}/batches/{batch_id}")[1]
        if seen is not None:
            seen.add(batch["status"])
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return batch
        time.sleep(0.02)
    raise AssertionError(f"batch {batch_id} never ended")


def file_lines(url: str, file_id: str | None) -> dict[str, dict[str, Any]]:
    if file_id is None:
        return {}
    status, content = call("GET", f"{url}/files/{file_id}/content")
    assert status == 200
    text = content.decode() if isinstance(content, bytes) else json.dumps(content)
    return {item["custom_id"]: item for item in map(json.loads, text.splitlines())}


def anthropic_batch(root: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    status, batch = call("POST", f"{root}/v1/messages/batches", {"requests": requests})
    assert status == 200 and batch["processing_status"] == "in_progress", batch
    return batch


def wait_anthropic(root: str, batch_id: str) -> dict[str, Any]:
    for _ in range(400):
        batch = call("GET", f"{root}/v1/messages/batches/{batch_id}")[1]
        if batch["processing_status"] == "ended":
            return batch
        time.sleep(0.02)
    raise AssertionError(f"message batch {batch_id} never ended")


def results(root: str, batch_id: str) -> dict[str, dict[str, Any]]:
    status, content = call("GET", f"{root}/v1/messages/batches/{batch_id}/results")
    assert status == 200, content
    text = content.decode() if isinstance(content, bytes) else json.dumps(content)
    return {item["custom_id"]: item["result"] for item in map(json.loads, text.splitlines())}


def test_openai_batch_end_to_end_answers_as_the_sync_endpoints(bodies):
    chat = [bodies["chat:sample-w01-sub01"], bodies["chat:sample-w01-sub02"]]
    with serving(batch_latency_s=0.5) as (_, url, _root):
        sync = [call("POST", f"{url}/chat/completions", body)[1] for body in chat]
        status, item = upload(url, jsonl([line(f"c{i}", body) for i, body in enumerate(chat)]))
        assert (
            status == 200
            and item["object"] == "file"
            and item["purpose"] == "batch"
            and item["id"].startswith("file-")
        )
        assert call("GET", f"{url}/files/{item['id']}")[1]["bytes"] == item["bytes"]
        assert call("GET", f"{url}/files/{item['id']}/content")[1] == jsonl(
            [line(f"c{i}", b) for i, b in enumerate(chat)]
        )
        began = time.monotonic()
        batch = openai_batch(
            url, [line(f"c{i}", body) for i, body in enumerate(chat)], metadata={"run": "r1"}
        )
        seen: set[str] = set()
        done = wait_openai(url, batch["id"], seen)
        assert time.monotonic() - began >= 0.5  # it ends on the wall clock (in_progress until then)
        assert seen <= {"in_progress", "completed"} and done["status"] == "completed"
        assert done["metadata"] == {"run": "r1"}
        assert (
            done["request_counts"] == {"total": 2, "completed": 2, "failed": 0}
            and done["error_file_id"] is None
        )
        assert (
            done["completed_at"] >= done["in_progress_at"] >= done["created_at"]
            and done["model"] == "apiflow/oracle"
        )
        output = file_lines(url, done["output_file_id"])
        assert [output[f"c{i}"]["response"]["body"] for i in range(2)] == sync
        assert all(o["id"].startswith("batch_req_") and o["error"] is None and o["response"]["status_code"] == 200
                   for o in output.values())  # fmt: skip
        assert done["usage"]["input_tokens"] == sum(s["usage"]["prompt_tokens"] for s in sync)
        assert call("GET", f"{url}/files/{done['output_file_id']}")[1]["purpose"] == "batch_output"
        # the Responses endpoint, the same way
        body = bodies["responses:sample-w01-sub01"]
        expected = call("POST", f"{url}/responses", body)[1]
        done = wait_openai(url, openai_batch(url, [line("r0", body, "/v1/responses")], "/v1/responses")["id"])
        assert file_lines(url, done["output_file_id"])["r0"]["response"]["body"] == expected


def test_anthropic_batch_end_to_end_answers_as_the_messages_endpoint(bodies):
    params = [bodies["messages:sample-w01-sub01"], bodies["messages:sample-w01-sub02"]]
    with serving(batch_latency_s=0.5) as (_, url, root):
        sync = [call("POST", f"{root}/v1/messages", body)[1] for body in params]
        began = time.monotonic()
        batch = anthropic_batch(root, [{"custom_id": f"m-{i}", "params": p} for i, p in enumerate(params)])
        assert batch["id"].startswith("msgbatch_") and batch["type"] == "message_batch"
        assert batch["request_counts"]["processing"] == 2 and batch["results_url"] is None
        done = wait_anthropic(root, batch["id"])
        assert time.monotonic() - began >= 0.5
        assert done["request_counts"] == {
            "processing": 0,
            "succeeded": 2,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        }
        assert done["ended_at"] and done["results_url"] == f"{root}/v1/messages/batches/{batch['id']}/results"
        got = results(root, batch["id"])
        for i, answer in enumerate(sync):
            message = got[f"m-{i}"]["message"]
            assert got[f"m-{i}"]["type"] == "succeeded" and message["usage"]["service_tier"] == "batch"
            assert message == answer | {"usage": answer["usage"] | {"service_tier": "batch"}}


def test_openai_refuses_what_the_batch_api_refuses(bodies):
    body = bodies["chat:sample-w01-sub01"]
    with serving() as (_, url, _root):
        good = upload(url, jsonl([line("a", body)]))[1]["id"]
        other = upload(url, jsonl([line("a", body)]), purpose="fine-tune")[1]["id"]
        assert upload(url, b"{}", filename="in.txt")[0] == 400  # the Batch API takes .jsonl only
        assert upload(url, b"{}", purpose="nonsense")[0] == 400
        base = {"input_file_id": good, "endpoint": CHAT, "completion_window": "24h"}
        for change, status, param in (
            ({"input_file_id": "file-nothere"}, 404, "input_file_id"),
            ({"input_file_id": other}, 400, "input_file_id"),
            ({"endpoint": "/v1/embeddings"}, 400, "endpoint"),
            ({"endpoint": "/v1/messages"}, 400, "endpoint"),
            ({"completion_window": "1h"}, 400, "completion_window"),
            ({"metadata": {"k": 1}}, 400, "metadata"),
            ({"endpoint": None}, 400, "endpoint"),
        ):
            got = call("POST", f"{url}/batches", {k: v for k, v in (base | change).items() if v is not None})
            assert got[0] == status and got[1]["error"]["param"] == param, (change, got)
            assert got[1]["error"]["type"] == "invalid_request_error"
        assert call("GET", f"{url}/batches/batch_nothere")[0] == 404
        assert call("GET", f"{url}/files/file-nothere/content")[0] == 404
        done = wait_openai(url, openai_batch(url, [line("a", body)])["id"])
        assert call("POST", f"{url}/batches/{done['id']}/cancel")[0] == 400  # it has ended
        assert (
            call("GET", f"{url}/batches?limit=0")[0] == 400
            and call("GET", f"{url}/batches?limit=101")[0] == 400
        )
        assert call("DELETE", f"{url}/batches/{done['id']}")[0] == 405
        stats = call("GET", f"{url}/stats")[1]
    assert stats["batch"]["answered"] == 1


@pytest.mark.parametrize(
    ("lines", "code", "where"),
    [
        (["{not json"], "invalid_json_line", 1),
        (["[1, 2]"], "invalid_json_line", 1),
        (
            [{"method": "POST", "url": CHAT, "body": {"model": "apiflow/oracle"}}],
            "missing_required_parameter",
            1,
        ),
        (
            [line("a", {"model": "apiflow/oracle"}), line("a", {"model": "apiflow/oracle"})],
            "duplicate_custom_id",
            2,
        ),
        ([line("a", {"model": "apiflow/oracle"}, method="GET")], "invalid_method", 1),
        ([line("a", {"model": "apiflow/oracle"}, url="/v1/responses")], "url_mismatch", 1),
        ([line("a", {"model": "apiflow/oracle"}), line("b", {"model": "apiflow/ace"})], "model_mismatch", 2),
        ([line("a", {"messages": []})], "missing_required_parameter", 1),
        ([], "empty_file", None),
    ],
)
def test_openai_bad_input_lines_fail_the_batch_with_errors_data(lines, code, where):
    with serving() as (server, url, _root):
        status, item = upload(url, jsonl(lines))
        batch = call(
            "POST",
            f"{url}/batches",
            {"input_file_id": item["id"], "endpoint": CHAT, "completion_window": "24h"},
        )[1]
        assert batch["status"] == "validating"
        failed = call("GET", f"{url}/batches/{batch['id']}")[1]
        stats = call("GET", f"{url}/stats")[1]
    assert (
        failed["status"] == "failed" and failed["failed_at"] is not None and failed["output_file_id"] is None
    )
    assert [(e["code"], e["line"]) for e in failed["errors"]["data"]] == [(code, where)]
    assert failed["request_counts"]["total"] == 0 and stats["batch"]["requests"] == 0


def test_openai_more_than_50000_lines_fail_the_batch():
    small = json.dumps(line("x", {"model": "apiflow/oracle"}))
    many = "".join(small.replace('"x"', f'"x{i}"') + "\n" for i in range(50_001)).encode()
    with serving() as (_, url, _root):
        item = upload(url, many)[1]
        batch = call(
            "POST",
            f"{url}/batches",
            {"input_file_id": item["id"], "endpoint": CHAT, "completion_window": "24h"},
        )[1]
        failed = call("GET", f"{url}/batches/{batch['id']}")[1]
    assert failed["status"] == "failed" and failed["errors"]["data"][0]["code"] == "too_many_tasks"


def test_anthropic_refuses_what_message_batches_refuse(bodies):
    params = bodies["messages:sample-w01-sub01"]
    cases = [
        [{"custom_id": "x" * 65, "params": params}],
        [{"custom_id": "", "params": params}],
        [{"custom_id": "has space", "params": params}],
        [{"custom_id": "ok.dot", "params": params}],
        [{"custom_id": "a", "params": params}, {"custom_id": "a", "params": params}],
        [{"params": params}],
        [{"custom_id": "a"}],
        [{"custom_id": "a", "params": {k: v for k, v in params.items() if k != "max_tokens"}}],
        [{"custom_id": "a", "params": {k: v for k, v in params.items() if k != "model"}}],
        [{"custom_id": "a", "params": params | {"messages": []}}],
        [{"custom_id": "a", "params": params | {"stream": True}}],
        [],
        [{"custom_id": f"r{i}", "params": {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}}
         for i in range(100_001)],
    ]  # fmt: skip
    with serving() as (_, _url, root):
        for requests in cases:
            status, answer = call("POST", f"{root}/v1/messages/batches", {"requests": requests})
            assert status == 400 and answer["type"] == "error", (requests[:2], answer)
            assert answer["error"]["type"] == "invalid_request_error"
        assert call("POST", f"{root}/v1/messages/batches", {"nothing": []})[0] == 400
        assert (
            call("GET", f"{root}/v1/messages/batches/msgbatch_nothere")[1]["error"]["type"]
            == "not_found_error"
        )
        ok = anthropic_batch(
            root, [{"custom_id": "A-z_0" + "9" * 59, "params": params}]
        )  # 64 characters pass
        assert wait_anthropic(root, ok["id"])["request_counts"]["succeeded"] == 1
        listed = call("GET", f"{root}/v1/messages/batches")[1]
    assert [b["id"] for b in listed["data"]] == [ok["id"]]


def test_anthropic_params_the_messages_api_refuses_come_back_errored(bodies):
    """Anthropic validates each request's params when it runs it: the sync 400 becomes ``errored``."""
    params = bodies["messages:sample-w01-sub01"]
    orphan = params | {"messages": [*params["messages"], {"role": "assistant", "content": "ok"},
                                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x",
                                                                  "content": "x"}]}]}  # fmt: skip
    with serving() as (_, _url, root):
        status, refused = call("POST", f"{root}/v1/messages", orphan)
        batch = anthropic_batch(
            root, [{"custom_id": "bad", "params": orphan}, {"custom_id": "good", "params": params}]
        )
        done = wait_anthropic(root, batch["id"])
        got = results(root, batch["id"])
    assert (
        status == 400 and done["request_counts"]["errored"] == 1 and done["request_counts"]["succeeded"] == 1
    )
    assert got["bad"]["type"] == "errored" and got["bad"]["error"]["request_id"].startswith("req_")
    assert {k: v for k, v in got["bad"]["error"].items() if k != "request_id"} == refused


def test_expiry_keeps_the_requests_done_and_reports_the_rest(bodies):
    chat, params = bodies["chat:sample-w01-sub01"], bodies["messages:sample-w01-sub01"]
    with serving(batch_latency_s=10.0, batch_expire_s=5.0) as (server, url, root):
        clock = Clock(server)
        openai = openai_batch(url, [line(f"c{i}", chat) for i in range(4)])  # due at 2.5, 5, 7.5 and 10 s
        anthropic = anthropic_batch(root, [{"custom_id": f"m{i}", "params": params} for i in range(4)])
        assert openai["expires_at"] == openai["created_at"] + 5
        clock.now += 4.0
        running = call("GET", f"{url}/batches/{openai['id']}")[1]
        assert running["status"] == "in_progress" and running["request_counts"]["completed"] == 1
        status, early = call("GET", f"{root}/v1/messages/batches/{anthropic['id']}/results")  # not ended yet
        assert (
            status == 400 and early["type"] == "error" and early["error"]["type"] == "invalid_request_error"
        )
        assert (
            call("GET", f"{root}/v1/messages/batches/{anthropic['id']}")[1]["request_counts"]["processing"]
            == 3
        )
        clock.now += 2.0
        expired = call("GET", f"{url}/batches/{openai['id']}")[1]
        ended = call("GET", f"{root}/v1/messages/batches/{anthropic['id']}")[1]
        output, errors = file_lines(url, expired["output_file_id"]), file_lines(url, expired["error_file_id"])
        got = results(root, anthropic["id"])
        stats = call("GET", f"{url}/stats")[1]
    assert (
        expired["status"] == "expired"
        and expired["expired_at"] is not None
        and expired["completed_at"] is None
    )
    assert sorted(output) == ["c0", "c1"] and sorted(errors) == ["c2", "c3"]
    assert all(e["response"] is None and e["error"]["code"] == "batch_expired" for e in errors.values())
    assert ended["processing_status"] == "ended" and ended["request_counts"]["expired"] == 2
    assert [got[f"m{i}"]["type"] for i in range(4)] == ["succeeded", "succeeded", "expired", "expired"]
    assert got["m3"] == {"type": "expired"} and stats["batch"]["answered"] == 4


def test_expiry_on_the_wall_clock(bodies):
    with serving(batch_latency_s=30.0, batch_expire_s=0.2) as (_, url, root):
        batch = openai_batch(url, [line("c0", bodies["chat:sample-w01-sub01"])])
        message = anthropic_batch(root, [{"custom_id": "m0", "params": bodies["messages:sample-w01-sub01"]}])
        time.sleep(0.3)
        assert wait_openai(url, batch["id"])["status"] == "expired"
        assert results(root, wait_anthropic(root, message["id"])["id"]) == {"m0": {"type": "expired"}}


def test_cancel_keeps_the_requests_done(bodies):
    chat, params = bodies["chat:sample-w01-sub01"], bodies["messages:sample-w01-sub01"]
    with serving(batch_latency_s=10.0) as (server, url, root):
        clock = Clock(server)
        openai = openai_batch(url, [line(f"c{i}", chat) for i in range(4)])
        anthropic = anthropic_batch(root, [{"custom_id": f"m{i}", "params": params} for i in range(4)])
        clock.now += 3.0  # one request of each is done
        cancelling = call("POST", f"{url}/batches/{openai['id']}/cancel")[1]
        canceling = call("POST", f"{root}/v1/messages/batches/{anthropic['id']}/cancel")[1]
        assert cancelling["status"] == "cancelling" and cancelling["cancelling_at"] is not None
        assert canceling["processing_status"] == "canceling" and canceling["cancel_initiated_at"] is not None
        assert call("GET", f"{root}/v1/messages/batches/{anthropic['id']}/results")[0] == 400
        clock.now += 60.0
        cancelled = call("GET", f"{url}/batches/{openai['id']}")[1]
        ended = call("GET", f"{root}/v1/messages/batches/{anthropic['id']}")[1]
        output, errors = (
            file_lines(url, cancelled["output_file_id"]),
            file_lines(url, cancelled["error_file_id"]),
        )
        got = results(root, anthropic["id"])
        again = call("POST", f"{url}/batches/{openai['id']}/cancel")
        stats = call("GET", f"{url}/stats")[1]
    assert cancelled["status"] == "cancelled" and cancelled["cancelled_at"] is not None
    assert list(output) == ["c0"] and sorted(errors) == ["c1", "c2", "c3"]
    assert {e["error"]["code"] for e in errors.values()} == {"batch_cancelled"}
    assert ended["processing_status"] == "ended" and ended["request_counts"]["canceled"] == 3
    assert [got[f"m{i}"]["type"] for i in range(4)] == ["succeeded", "canceled", "canceled", "canceled"]
    assert again[0] == 400 and stats["batch"]["requests"] == stats["batch"]["answered"] == 2


def test_p_batch_fail_is_seeded_by_the_custom_id_and_its_attempt(bodies):
    chat, params = bodies["chat:sample-w01-sub01"], bodies["messages:sample-w01-sub01"]
    ids = [f"q{i}" for i in range(24)]
    plays = []
    for _ in range(2):  # two servers with one seed play the same
        with serving(p_batch_fail=0.5, seed=7) as (_, url, root):
            done = wait_openai(url, openai_batch(url, [line(i, chat) for i in ids])["id"])
            errors = file_lines(url, done["error_file_id"])
            got = results(
                root,
                wait_anthropic(
                    root, anthropic_batch(root, [{"custom_id": i, "params": params} for i in ids])["id"]
                )["id"],
            )
            failed = sorted(errors)
            retry = wait_openai(url, openai_batch(url, [line(i, chat) for i in failed])["id"])
            stats = call("GET", f"{url}/stats")[1]
        plays.append((failed, sorted(i for i in ids if got[i]["type"] == "errored"), retry["request_counts"]))
        assert 0 < len(failed) < len(ids) and done["request_counts"]["failed"] == len(failed)
        assert failed == sorted(i for i in ids if unit(7, "openai", i, 0) < 0.5)
        assert all(e["response"]["status_code"] == 500 and e["response"]["body"]["error"]["type"] == "server_error"
                   for e in errors.values())  # fmt: skip
        errored = [got[i]["error"] for i in ids if got[i]["type"] == "errored"]
        assert errored and all(e["type"] == "error" and e["error"]["type"] == "api_error" for e in errored)
        # a resubmitted custom_id rolls again (its attempt is part of the seed)
        assert retry["request_counts"]["failed"] == sum(unit(7, "openai", i, 1) < 0.5 for i in failed)
        answered = len(ids) - len(failed) + len(ids) - len(errored) + retry["request_counts"]["completed"]
        assert (
            stats["batch"]["requests"] == 2 * len(ids) + len(failed)
            and stats["batch"]["answered"] == answered
        )
        assert stats["paid_twice"] == 0  # a failed request was not paid, so its retry is paid once
    assert plays[0] == plays[1]


def test_lists_page_newest_first(bodies):
    chat, params = bodies["chat:sample-w01-sub01"], bodies["messages:sample-w01-sub01"]
    with serving(batch_latency_s=3600.0) as (_, url, root):
        openai = [openai_batch(url, [line("a", chat)])["id"] for _ in range(5)]
        anthropic = [anthropic_batch(root, [{"custom_id": "a", "params": params}])["id"] for _ in range(5)]
        pages, after = [], ""
        while True:
            page = call("GET", f"{url}/batches?limit=2{after}")[1]
            pages.append(page)
            if not page["has_more"]:
                break
            after = f"&after={page['last_id']}"
        newest = call("GET", f"{root}/v1/messages/batches?limit=2")[1]
        older = call("GET", f"{root}/v1/messages/batches?limit=2&after_id={newest['last_id']}")[1]
        oldest = call("GET", f"{root}/v1/messages/batches?limit=2&after_id={older['last_id']}")[1]
        back = call("GET", f"{root}/v1/messages/batches?limit=2&before_id={oldest['first_id']}")[1]
        everything = call("GET", f"{root}/v1/messages/batches?limit=1000")[1]
        assert call("GET", f"{root}/v1/messages/batches?limit=1001")[0] == 400
    assert [b["id"] for p in pages for b in p["data"]] == openai[::-1]
    assert [len(p["data"]) for p in pages] == [2, 2, 1] and [p["has_more"] for p in pages] == [
        True,
        True,
        False,
    ]
    assert all(p["first_id"] == p["data"][0]["id"] and p["last_id"] == p["data"][-1]["id"] for p in pages)
    assert [b["id"] for b in newest["data"] + older["data"] + oldest["data"]] == anthropic[::-1]
    assert newest["has_more"] and older["has_more"] and not oldest["has_more"]
    assert [b["id"] for b in back["data"]] == [b["id"] for b in older["data"]] and back["has_more"]
    assert [b["id"] for b in everything["data"]] == anthropic[::-1] and not everything["has_more"]


def test_stats_bill_each_tier_and_count_custom_ids_paid_twice(bodies):
    chat, params = bodies["chat:sample-w01-sub01"], bodies["messages:sample-w01-sub01"]
    with serving() as (_, url, root):
        sync = call("POST", f"{url}/chat/completions", chat)[1]["usage"]
        wait_openai(url, openai_batch(url, [line("a", chat), line("b", chat)])["id"])
        before = call("GET", f"{url}/stats")[1]
        wait_openai(url, openai_batch(url, [line("a", chat), line("c", chat)])["id"])  # "a" is paid again
        wait_openai(url, openai_batch(url, [line("a", chat)])["id"])  # and again: still one custom_id
        anthropic_batch(root, [{"custom_id": "a", "params": params}])  # another provider: another account
        stats = call("GET", f"{url}/stats")[1]  # settles what is due (latency 0: everything)
    assert before["paid_twice"] == 0 and stats["paid_twice"] == 1
    assert stats["sync"]["requests"] == stats["sync"]["answered"] == stats["answered"] == 1
    assert (
        stats["sync"]["input"] == sync["prompt_tokens"]
        and stats["sync"]["output"] == sync["completion_tokens"]
    )
    assert stats["batch"]["requests"] == stats["batch"]["answered"] == 6
    assert stats["batch"]["input"] > 5 * sync["prompt_tokens"]
    assert stats["billed_input"] == stats["sync"]["input"] + stats["batch"]["input"]
    assert stats["billed_output"] == stats["sync"]["output"] + stats["batch"]["output"]


def test_litellm_drives_the_openai_batch_side(bodies):
    """litellm 1.110's files and batches functions (the OpenAI SDK underneath) against the stand-in."""
    from apiflow.models.litellm_client import configure_litellm

    configure_litellm()
    import litellm

    chat = bodies["chat:sample-w01-sub01"]

    async def play(url: str, clock: Clock) -> None:
        where = {"api_base": url, "api_key": "sk-local", "custom_llm_provider": "openai"}
        content = jsonl([line("a", chat), line("b", chat)])
        item = await litellm.acreate_file(file=("turns.jsonl", io.BytesIO(content)), purpose="batch", **where)
        assert item.id.startswith("file-") and item.bytes == len(content)
        batch = await litellm.acreate_batch(completion_window="24h", endpoint=CHAT, input_file_id=item.id,
                                            metadata={"apiflow_batch": "k1"}, **where)  # fmt: skip
        assert batch.status == "validating"
        assert (await litellm.aretrieve_batch(batch_id=batch.id, **where)).status == "in_progress"
        clock.now += 11.0
        batch = await litellm.aretrieve_batch(batch_id=batch.id, **where)
        assert batch.status == "completed" and batch.request_counts.completed == 2
        output = await litellm.afile_content(file_id=batch.output_file_id, **where)
        lines = [json.loads(text) for text in output.content.decode().splitlines()]
        assert [item["custom_id"] for item in lines] == ["a", "b"]
        page = await litellm.alist_batches(limit=10, **where)
        assert [b.id for b in page.data] == [batch.id] and page.data[0].metadata == {"apiflow_batch": "k1"}
        slow = await litellm.acreate_batch(
            completion_window="24h", endpoint=CHAT, input_file_id=item.id, **where
        )
        assert (await litellm.acancel_batch(batch_id=slow.id, **where)).status == "cancelling"
        clock.now += 1.0
        assert (await litellm.aretrieve_batch(batch_id=slow.id, **where)).status == "cancelled"

    with serving(batch_latency_s=10.0) as (server, url, _root):
        asyncio.run(play(url, Clock(server)))
        sync = call("POST", f"{url}/chat/completions", chat)[1]
        first = server.provider.batches.jobs[next(iter(server.provider.batches.jobs))]
    assert first.outcomes[0].body == sync


def test_litellm_reads_the_anthropic_batch_side(bodies):
    """litellm 1.110 reads a Message Batch (status, results) but cannot create one."""
    from apiflow.models.litellm_client import configure_litellm

    configure_litellm()
    import litellm

    params = bodies["messages:sample-w01-sub01"]

    async def play(root: str, batch_id: str) -> None:
        where = {"api_base": root, "api_key": "sk-ant-local", "custom_llm_provider": "anthropic"}
        retrieved = await litellm.aretrieve_batch(batch_id=batch_id, **where)
        assert retrieved.status == "completed" and retrieved.request_counts.completed == 1
        assert retrieved.output_file_id == batch_id
        content = await litellm.afile_content(file_id=batch_id, **where)
        (result,) = [json.loads(text) for text in content.content.decode().splitlines()]
        # 1.110 hands back Anthropic's own JSONL for a msgbatch_ id (its files config, untransformed)
        assert result["custom_id"] == "m0" and result["result"]["message"]["usage"]["service_tier"] == "batch"
        with pytest.raises(litellm.exceptions.BadRequestError, match="create_batch"):
            await litellm.acreate_batch(completion_window="24h", endpoint="/v1/messages", input_file_id="file-x",
                                        custom_llm_provider="anthropic", api_base=root, api_key="k")  # fmt: skip

    with serving() as (_, _url, root):
        batch = anthropic_batch(root, [{"custom_id": "m0", "params": params}])
        wait_anthropic(root, batch["id"])
        asyncio.run(play(root, batch["id"]))
