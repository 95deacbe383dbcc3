"""The transition memo: replayed answers are the world's own, and a trial never follows a stale path."""

from __future__ import annotations

import math
from typing import Any

import pytest

from apiflow.world.http import HttpRequest, HttpResponse
from apiflow.world.transitions import TransitionMemo, request_key


class CountingWorld:
    """A pure toy world: the answer is a function of the requests so far; counts real sends."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.state: tuple[str, ...] = ()
        self.requests_served = 0
        self.sent = 0
        self.fail_on = fail_on

    def send(self, request: HttpRequest) -> HttpResponse:
        if request.url == self.fail_on:
            raise RuntimeError("world fault")
        self.sent += 1
        self.requests_served += 1
        self.state = (*self.state, f"{request.method} {request.url} {request.body!r}")
        return HttpResponse(200, {"n": str(len(self.state))}, {"history": list(self.state)})


def _play(memo: TransitionMemo, root_key: Any, requests: list[HttpRequest], keep: Any = None, **world: Any):
    session = CountingWorld(**world)
    root = memo.root(root_key, (keep if keep is not None else root_key,))
    send = memo.send(session, session.send, root)
    answers = [send(r) for r in requests]
    return session, answers


def _get(url: str, body: Any = None, **headers: str) -> HttpRequest:
    return HttpRequest("GET" if body is None else "POST", url, dict(headers), body)


def test_same_history_is_answered_from_the_memo() -> None:
    memo = TransitionMemo()
    requests = [_get("/a"), _get("/b", {"x": 1}), _get("/c", auth="t")]
    first, answers = _play(memo, "root", requests)
    second, replayed = _play(memo, "root", requests)
    assert first.sent == 3 and second.sent == 0
    assert replayed == answers
    assert (second.state, second.requests_served) == (first.state, first.requests_served)
    assert memo.stats() == {"hits": 3, "misses": 3, "edges": 3, "roots": 1}


def test_a_different_request_leaves_the_shared_prefix() -> None:
    memo = TransitionMemo()
    _play(memo, "root", [_get("/a"), _get("/b"), _get("/c")])
    branch, answers = _play(memo, "root", [_get("/a"), _get("/x"), _get("/c")])
    assert branch.sent == 2  # /a replayed; /x and the /c after it are a new history
    assert answers[2].body["history"] == ["GET /a None", "GET /x None", "GET /c None"]
    again, _ = _play(memo, "root", [_get("/a"), _get("/x"), _get("/c")])
    assert again.sent == 0


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"x": 1}, {"x": 1.0}),
        ({"x": 1}, {"x": True}),
        ({"x": 0}, {"x": False}),
        ({"x": "1"}, {"x": 1}),
        ('{"x":1}', {"x": 1}),  # a text body and the JSON body it spells
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # key order reaches the world
        ([1], (1,)),
        ({"x": 0.0}, {"x": -0.0}),
        ({"x": None}, {"x": math.nan}),
        ({1: "int key"}, {"1": "int key"}),
    ],
)
def test_bodies_equal_by_eq_but_not_to_the_world_get_other_keys(one: Any, other: Any) -> None:
    a, b = request_key(_get("/a", one)), request_key(_get("/a", other))
    assert a is not None and b is not None or a is None or b is None
    assert a != b or a is None


class Text(str):
    pass


@pytest.mark.parametrize("body", [{"x": object()}, {"x": Text("subclass")}, Text("text"), [{1: object()}]])
def test_bodies_that_cannot_be_keyed_exactly_are_not_memoised(body: Any) -> None:
    assert request_key(_get("/a", body)) is None


def test_equal_requests_get_equal_keys() -> None:
    def build() -> HttpRequest:
        return _get("/a", {"x": [1, 2.5, None, True, "é"], "y": {"z": 2**70}}, auth="t")

    assert request_key(build()) == request_key(build())


def test_an_unkeyable_request_takes_the_trial_off_the_trie() -> None:
    memo = TransitionMemo()
    requests = [_get("/a"), HttpRequest("GET", "/b", {"h": Text("a subclass")}), _get("/c")]
    _play(memo, "root", requests)
    again, _ = _play(memo, "root", requests)
    assert again.sent == 2  # /a replayed; after /b the history is unknown, so /c goes to the world
    assert memo.edges == 1


def test_a_send_that_raises_files_nothing_and_leaves_the_trie() -> None:
    memo = TransitionMemo()
    session = CountingWorld(fail_on="/boom")
    send = memo.send(session, session.send, memo.root("root", ("root",)))
    send(_get("/a"))
    with pytest.raises(RuntimeError):
        send(_get("/boom"))
    send(_get("/c"))
    assert memo.edges == 1  # /c after a fault is not a history another trial can share


def test_roots_are_told_apart_by_the_objects_they_keep() -> None:
    memo = TransitionMemo()
    a, b = object(), object()
    _play(memo, "same-key", [_get("/a")], keep=a)
    other, _ = _play(memo, "same-key", [_get("/a")], keep=b)
    assert other.sent == 1  # a new object at the key (a reused id) is a new root, never a stale hit
    assert memo.stats()["roots"] == 1 and memo.edges == 1  # the old trie left, and its edge with it


def test_the_least_recently_used_root_leaves_when_full() -> None:
    memo = TransitionMemo(max_edges=4)
    _play(memo, "old", [_get("/a"), _get("/b")])
    _play(memo, "new", [_get("/a"), _get("/b")])
    _play(memo, "newer", [_get("/a")])
    assert memo.stats()["roots"] == 2 and memo.edges == 3
    old, _ = _play(memo, "old", [_get("/a"), _get("/b")])
    assert old.sent == 2


def test_a_trial_whose_root_leaves_midway_goes_on_with_the_world() -> None:
    memo = TransitionMemo(max_edges=2)
    first = CountingWorld()
    send = memo.send(first, first.send, memo.root("first", ("first",)))
    send(_get("/a"))
    _play(memo, "second", [_get("/a"), _get("/b")])  # fills the memo: "first" leaves
    answer = send(_get("/b"))
    assert answer.body["history"] == ["GET /a None", "GET /b None"]
    assert memo.edges <= 2


def test_roots_are_bounded_even_without_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    from apiflow.world import transitions

    monkeypatch.setattr(transitions, "MAX_ROOTS", 3)
    memo = TransitionMemo()
    for name in ("a", "b", "c", "d"):
        memo.root(name, (name,))
    assert memo.stats()["roots"] == 3
