"""The grader's shortcuts give exactly what the plain computations give.

Each fast path (issue 11: trial cost) is checked against the computation it stands for, on
random inputs that hit both its shortcut and its fallback.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from apiflow.grading import live
from apiflow.grading.answer import _normalise
from apiflow.grading.diagnostics import checkpoint, constraint
from apiflow.grading.evidence import Evidence, Exchange, task_text_of
from apiflow.grading.predicates import _find_any_depth, leaves, url_regex
from apiflow.grading.provenance import Received
from apiflow.grading.spec import CheckpointSpec, ConstraintSpec
from apiflow.grading.transcript import abstention_in

NAMES = ["execute", "read", "write", "clarify", "report_blocked", 7, None]


def _messages(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    for turn in range(rng.randint(0, 6)):
        calls: Any = [
            {"id": rng.choice([f"c{turn}-{i}", "dup", None]), "name": rng.choice(NAMES), "arguments": {}}
            for i in range(rng.randint(0, 3))
        ]
        if rng.random() < 0.1:
            calls.append("not a call")
        if rng.random() < 0.1:
            calls = "not a list"
        messages.append({"role": "assistant", "content": [], "tool_calls": calls})
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict) and rng.random() < 0.8:
                content = rng.choice(["trial terminated (clarify): why?", "ok", 3])
                result: dict[str, Any] = {
                    "role": "tool",
                    "content": content,
                    "tool_call_id": call["id"],
                    "function": call["name"],
                }
                if rng.random() < 0.2:
                    result["error"] = {"message": "no"}
                messages.append(result)
    return messages


def _plain_pairing(messages: list[dict[str, Any]]) -> bool:
    """True when no ``read`` was called and every turn's call ids are distinct (results pair exactly)."""
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not isinstance(calls, list):
            continue
        ids: set[str] = set()
        for call in calls:
            if not isinstance(call, dict) or call.get("name") == "read":
                return False
            ident = call.get("id")
            if not isinstance(ident, str) or ident in ids:
                return False
            ids.add(ident)
    return True


@pytest.mark.parametrize("seed", range(300))
def test_abstention_shortcut_matches_the_pairing_replay(seed: int) -> None:
    messages = _messages(random.Random(seed))
    abstention, calls = abstention_in(messages)
    walked = live._calls(messages)
    assert walked.made == calls
    assert (abstention_in(messages)[0] if walked.abstaining else None) == abstention
    assert walked.task_text == task_text_of(messages)
    assert walked.plain == _plain_pairing(messages)


BODIES: list[Any] = [
    {"id": "smk-e36f-0db4", "total": 12.5},
    "plain text body with ünïcode",
    [{"name": "Ada"}, {"name": "Bob", "tags": ["x", "y"]}],
    {"nested": {"deep": "value-42"}},
]


@pytest.mark.parametrize("seed", range(100))
def test_received_verbatim_search_matches_the_eager_one(seed: int) -> None:
    rng = random.Random(seed)
    bodies = rng.sample(BODIES, rng.randint(0, len(BODIES)))
    task_text = rng.choice(["", "find Ada's order", "value-42 is given"])
    seen = Received(bodies, task_text, unknown=rng.random() < 0.3)
    eager = [b if isinstance(b, str) else json.dumps(b, ensure_ascii=False) for b in bodies] + [task_text]
    for value in ["Ada", "value-42", "ünïcode", '"total": 12.5', "absent", "smk-e36f-0db4", "Bob", "12.5"]:
        assert seen._verbatim(value) == any(value in raw for raw in eager), value


def _exchange(index: int, method: str, url: str, status: int | None, body: Any = None) -> Exchange:
    return Exchange(index, method, url, {"X-Key": "k"} if index % 2 else None, body, status, None)


@pytest.mark.parametrize("seed", range(100))
def test_route_diagnostics_match_the_plain_definition(seed: int) -> None:
    rng = random.Random(seed)
    urls = ["/v1/orders", "/v1/orders/42", "/v2/orders/42/items", "/v1/users", "https://x/v1/orders?q=1"]
    exchanges = tuple(
        _exchange(i, rng.choice(["GET", "POST"]), rng.choice(urls), rng.choice([200, 404, None]), {"a": 1})
        for i in range(rng.randint(0, 6))
    )
    evidence = Evidence(exchanges=exchanges)
    pattern = rng.choice([r"/v1/orders(/\d+)?$", "/orders/", r"^/v2/", "users", "(unclosed"])
    method = rng.choice([None, "get", "POST"])

    def routed(e: Exchange) -> bool:
        return (method is None or e.method == method.upper()) and bool(url_regex(pattern).search(e.url))

    status = rng.choice([None, 200])
    wanted = rng.choice([{}, {"a": 1}, {"a": 2}])
    spec = CheckpointSpec(id="cp", url_pattern=pattern, method=method, status=status, body_contains=wanted)
    hit = any(
        routed(e)
        and (status is None or e.status == status)
        and (not wanted or e.body == {**e.body, **wanted})
        for e in exchanges
    )
    assert checkpoint(spec, evidence)["hit"] is hit
    matching = [e for e in exchanges if routed(e)]
    forbid = constraint(ConstraintSpec(id="f", kind="forbid", url_pattern=pattern, method=method), evidence)
    assert forbid["violated"] is bool(matching)
    assert forbid["detail"] == (f"forbidden url called: {matching[0].url}" if matching else "")
    require = constraint(
        ConstraintSpec(id="r", kind="require", url_pattern=pattern, method=method, header="x-key"), evidence
    )
    assert require["applicable"] is bool(matching)
    missing = [e for e in matching if not e.headers]
    assert require["violated"] is bool(missing)


@pytest.mark.parametrize(
    "text", ["", "Committed", "com-mit_ted", "ÉTÉ 2024", "a\u00b2b", "x\u0663y", "tab\tand space", "ß"]
)
def test_normalise_keeps_lowercased_alphanumerics(text: str) -> None:
    assert _normalise(text) == "".join(ch for ch in text.lower() if ch.isalnum())


class _Sent:
    def __init__(self, request: Any, response: Any, ref: str | None) -> None:
        self.request, self.response, self.response_ref = request, response, ref
        self.network_error = None if response is not None else "connection refused"
        self.request_ref = "request:req-1"


class _Response:
    status, body = 201, {"id": "x"}


@pytest.mark.parametrize(
    "request_",
    [
        {"method": "post", "url": "/v1/x", "headers": {"a": "b"}, "body": {"k": 1}},
        {"url": 3},
        {"method": 5},
        "not a dict",
        {},
    ],
)
@pytest.mark.parametrize("response", [_Response(), None])
def test_live_exchange_is_exchange_sent(request_: Any, response: Any) -> None:
    # The walk builds each exchange positionally; its preview is set afterwards (``_with_previews``).
    for ref in ("request:req-1/response:r", None):
        sent = _Sent(request_, response, ref)
        walked = live._exchanges([sent] * 5)
        assert walked.exchanges[4] == Exchange.sent(
            4,
            request_ if isinstance(request_, dict) else {},
            status=response.status if response is not None else None,
            response_body=response.body if response is not None else None,
            preview=None,
            network_error=sent.network_error,
            request_ref=sent.request_ref,
            response_ref=ref,
        )
        assert walked.responses == (5 if response is not None else 0)


def _plain_any_depth(body: Any, key: str, found: list[Any]) -> bool:
    """The walk ``_find_any_depth`` shortcuts: every child visited, leaves through ``leaves``."""
    hit = False
    if isinstance(body, dict):
        if key in body:
            hit = True
            found.extend(leaves(body[key]))
        for item in body.values():
            hit = _plain_any_depth(item, key, found) or hit
    elif isinstance(body, list):
        for item in body:
            hit = _plain_any_depth(item, key, found) or hit
    return hit


def _body(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 4 and roll < 0.3:
        return {rng.choice("abk"): _body(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 4 and roll < 0.45:
        return [_body(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice([None, 0, 1.5, True, "", "v", "k"])


@pytest.mark.parametrize("seed", range(200))
def test_any_depth_key_search_matches_the_plain_walk(seed: int) -> None:
    rng = random.Random(seed)
    body = _body(rng)
    found: list[Any] = []
    expected: list[Any] = []
    assert _find_any_depth(body, "k", found) == _plain_any_depth(body, "k", expected)
    assert found == expected and [type(v) for v in found] == [type(v) for v in expected]
