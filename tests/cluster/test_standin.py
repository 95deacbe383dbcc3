"""The stand-in provider (apiflow/testing/standin_server.py): OpenAI shapes, faults, statelessness."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.testing.standin_server import StandinConfig, StandinServer


def post(url: str, body: dict) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        f"{url}/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


@pytest.fixture(scope="module")
def opening():
    task = load_bank(DEFAULT_BANK).task("sample-w01-sub01")
    return {"model": "apiflow/oracle", "messages": initial_messages(task)}


def test_answers_like_openai_and_is_stateless(opening):
    with StandinServer() as url:
        status, _, first = post(url, opening)
        again = post(url, opening)[2]
    assert status == 200 and first == again  # a retried request gets the same answer
    message = first["choices"][0]["message"]
    assert message["tool_calls"] and json.loads(message["tool_calls"][0]["function"]["arguments"])
    assert (
        first["usage"]["total_tokens"]
        == first["usage"]["prompt_tokens"] + first["usage"]["completion_tokens"]
    )


def test_rate_limit_answers_429_with_retry_after(opening):
    with StandinServer(StandinConfig(rpm=60, burst_s=1.0)) as url:
        codes = [post(url, opening) for _ in range(3)]
    assert codes[0][0] == 200
    limited = [c for c in codes if c[0] == 429]
    assert limited and float(limited[0][1]["retry-after"]) >= 1 and "retry-after-ms" in limited[0][1]


def test_the_limit_holds_a_steady_rate_and_its_429s_name_the_limit_and_are_timed(opening):
    """A greedy client gets the bucket's burst, then the rate (what bench/bench_ratelimit.py learns)."""
    import time

    with StandinServer(StandinConfig(rpm=240, burst_s=1.0)) as url:
        began = time.monotonic()
        codes = []
        while time.monotonic() - began < 2.0:
            codes.append(post(url, opening))
        elapsed = time.monotonic() - began
        server_stats = json.loads(urllib.request.urlopen(f"{url}/stats/times", timeout=10).read())
    answered = sum(c[0] == 200 for c in codes)
    assert answered <= 4 + 4 * elapsed + 1  # a full bucket (4), then 4 a second
    limited = [c for c in codes if c[0] == 429]
    assert limited and all("for requests" in c[2]["error"]["message"] for c in limited)
    assert len(server_stats["limited_at"]) == len(limited)
    with StandinServer(StandinConfig(rpm=6000, tpm=60, burst_s=1.0)) as url:
        codes = [post(url, opening) for _ in range(2)]
    assert codes[1][0] == 429 and "for tokens" in codes[1][2]["error"]["message"]


def test_injected_faults(opening):
    with StandinServer(StandinConfig(p_500=1.0)) as url:
        assert post(url, opening)[0] == 500
    with StandinServer(StandinConfig(p_malformed=1.0)) as url:
        args = post(url, opening)[2]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        with pytest.raises(ValueError):
            json.loads(args)
    with StandinServer(StandinConfig(p_empty=1.0)) as url:
        message = post(url, opening)[2]["choices"][0]["message"]
        assert message["content"] is None and "tool_calls" not in message
    with (
        StandinServer(StandinConfig(p_timeout=1.0, timeout_s=0.2)) as url,
        pytest.raises((urllib.error.URLError, ConnectionError, OSError)),
    ):
        post(url, opening)  # the connection is dropped without an answer


def test_unknown_conversation_is_a_bad_request():
    with StandinServer() as url:
        status, _, body = post(
            url, {"model": "apiflow/oracle", "messages": [{"role": "user", "content": "hi"}]}
        )
    assert status == 400 and body["error"]["type"] == "invalid_request_error"


@pytest.mark.slow
def test_malformed_and_empty_replies_reach_the_trial_through_litellm():
    from apiflow.agent import TrialSpec
    from apiflow.models import make_model
    from apiflow.models.retry import RetryPolicy, retry_hook
    from apiflow.runner import play_trial_sync

    bank = load_bank(DEFAULT_BANK)
    task = bank.task("sample-w01-sub02")
    with StandinServer(StandinConfig(p_malformed=0.5, seed=2)) as url:
        model = make_model(
            "openai/apiflow/oracle", task, 0, {"api_base": url, "api_key": "k", "max_retries": 0}
        )
        model.retry = retry_hook(RetryPolicy(max_attempts=2))  # type: ignore[attr-defined]
        record = play_trial_sync(
            TrialSpec(
                task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                bank_hash=bank.hash, run_id="r", model_slug="standin",
            ),
            model,
        )
    assert record.apiflow.parse_errors > 0 and not record.is_harness_outcome  # the model's fault, not ours
    assert record.apiflow.retries == []  # malformed JSON is an answer, never retried


def test_holds_many_requests_at_once_on_one_loop(opening):
    # A request waiting out its latency is a sleeping task on the server's loop: 300 at once are
    # all open together (the stand-in's own count) and answered in about one latency.
    import asyncio
    import threading
    import time

    import aiohttp

    async def burst(url: str, n: int) -> list[int]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def one() -> int:
                async with session.post(f"{url}/chat/completions", json=opening) as response:
                    await response.read()
                    return response.status

            return await asyncio.gather(*(one() for _ in range(n)))

    # 3 s, not 1: under a loaded suite the client took over a second to open all 300 connections,
    # and the first answers went out before the last requests arrived (peak 234 of 300, seen once).
    server = StandinServer(StandinConfig(latency_s=3.0))
    with server as url:
        threads = threading.active_count()
        started = time.monotonic()
        codes = asyncio.run(burst(url, 300))
        wall = time.monotonic() - started
        assert threading.active_count() == threads  # no thread per request
    stats = server.provider.stats
    assert codes == [200] * 300 and stats.answered == 300
    assert stats.peak_in_flight == 300 and max(stats.in_flight_at) == 300 and stats.in_flight == 0
    assert wall < 10  # one thread, one latency: not 300 latencies one after another


def test_keep_alive_and_a_chunked_body(opening):
    import http.client

    with StandinServer() as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        data = json.dumps(opening).encode()
        answers = []
        for chunked in (False, True):  # two requests on one connection, the second sent in chunks
            body = iter([data[:100], data[100:]]) if chunked else data
            connection.request("POST", "/v1/chat/completions", body=body,
                               headers={"content-type": "application/json"}, encode_chunked=chunked)  # fmt: skip
            response = connection.getresponse()
            answers.append((response.status, json.loads(response.read())))
        connection.close()
    assert answers[0] == answers[1] and answers[0][0] == 200
