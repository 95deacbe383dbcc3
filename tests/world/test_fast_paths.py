"""The dispatcher's fast paths agree with the plain forms they replaced (docs/results/030-agent-loop-rounds.md,
"Trial cost, round three (world + tools)").

``assoc_in`` is a loop instead of a recursion; feature reads (``getter_of``) and the common
condition operators take their branch when the world is compiled instead of per request; route
matches are remembered per path. The references below are the forms as they were; both must give
the same value (or the same error) for every input, including odd ones no bank holds.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any

import pytest

from apiflow.world import HttpRequest, WorldDef, WorldSession
from apiflow.world.canaries import CanaryCodec, suffix
from apiflow.world.compiled import MATCH_MEMO, MATCH_MEMO_PATH, compiled
from apiflow.world.conditions import _compare, compile_condition
from apiflow.world.dispatch import CALLS, TOKENS, _counted
from apiflow.world.features import Features, address_of, getter_of, parse_url
from apiflow.world.model import Condition
from apiflow.world.state import MISSING, assoc_in, get_in, split_path


def _assoc_reference(tree: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(tree, list) and head.lstrip("-").isdigit():
        copy_list = list(tree)
        copy_list[int(head)] = _assoc_reference(copy_list[int(head)], rest, value)
        return copy_list
    copy = dict(tree) if isinstance(tree, dict) else {}
    copy[head] = _assoc_reference(copy.get(head, {}), rest, value)
    return copy


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.3:
        return rng.choice([0, 1, "x", "", None, True, False, 2.5, [], {}])
    if roll < 0.65:
        return {rng.choice("abc0"): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def _outcome(fn: Any, *args: Any) -> tuple[Any, ...]:
    try:
        return ("ok", repr(fn(*args)))
    except Exception as exc:  # the same error type and text, or the test fails
        return ("error", type(exc), str(exc))


def test_assoc_in_matches_the_recursive_form() -> None:
    rng = random.Random(11)
    keys = ["a", "b", "c", "0", "1", "-1", "2", "x5", ""]
    for _ in range(5000):
        tree = _random_value(rng)
        parts = [rng.choice(keys) for _ in range(rng.randint(0, 4))]
        before = repr(tree)
        assert _outcome(assoc_in, tree, parts, "V") == _outcome(_assoc_reference, tree, parts, "V"), (
            tree,
            parts,
        )
        assert repr(tree) == before  # never mutated


def _get_reference(tree: Any, parts: list[str]) -> Any:
    node = tree
    for part in parts:
        if isinstance(node, dict):
            if part not in node:
                return MISSING
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(node) <= index < len(node):
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node


def test_get_in_matches_the_plain_form() -> None:
    rng = random.Random(14)
    keys = ["a", "b", "c", "0", "1", "-1", "2", "x5", ""]
    for _ in range(5000):
        tree = _random_value(rng)
        parts = [rng.choice(keys) for _ in range(rng.randint(0, 4))]
        got, expected = get_in(tree, parts), _get_reference(tree, parts)
        assert got is expected or repr(got) == repr(expected), (tree, parts)


def _random_features(rng: random.Random) -> Features:
    def value() -> Any:
        return _random_value(rng)

    return Features(
        rng.choice(["GET", "POST"]),
        {"id": rng.choice(["p1", "p2"])},
        rng.choice([{}, {"page": "2"}, {"a": "x"}]),
        rng.choice([{}, {"x-a": "1"}, {"authorization": "Bearer t"}]),
        rng.choice(["none", "json", "form", "text"]),
        rng.choice([None, value(), {"a": value(), "b": {"c": value()}}, "raw"]),
        {"token": "t", "known": True, "scopes": ["s"], "uses": 1},
        rng.choice([{}, {"a": value(), "b": value()}, {"a": {"b": value()}, "0": [value()]}]),
        rng.randint(0, 3),
    )


NAMES = [
    "method",
    "path.id",
    "path.nope",
    "query.page",
    "query",
    "header.X-A",
    "header.authorization",
    "body",
    "body.a",
    "body.b.c",
    "body.0",
    "body_kind",
    "auth.token",
    "auth.uses",
    "auth",
    "state.a",
    "state.b",
    "state.a.b",
    "state.0.0",
    "state",
    "route.calls",
    "route.other",
    "nope.x",
]


def test_feature_getters_read_what_at_reads() -> None:
    rng = random.Random(12)
    for _ in range(400):
        features = _random_features(rng)
        for name in NAMES:
            address = address_of(name)
            expected = _outcome(features.at, address)
            assert _outcome(getter_of(address), features) == expected, name


OPERANDS: dict[str, list[Any]] = {
    # Strings a feature of ``_random_features`` holds ("p1", "2", "1", "Bearer t", "GET", "json"):
    # a string constant takes ``_text_equality``'s ``==``, which must agree when it matches too.
    "eq": [True, False, 1, 0, "x", "p1", "2", "1", "Bearer t", "GET", "json", None, [], {}, 2.5]
    + ["{{state.a}}", "{{path.id}}"],
    "ne": [True, 1, "x", "p1", "2", "1", "Bearer t", None, "{{state.b}}"],
    "present": [True, False],
    "type": ["int", "number", "string", "bool", "object", "list", "null"],
    "in": [[1, True, "x"], [None], []],
    "contains": ["x", 1],
    "gt": [0.5],
}


def test_compiled_conditions_answer_as_compare_does() -> None:
    rng = random.Random(13)
    conditions = [
        (Condition.model_validate({"at": name, op: operand}), name, op, operand)
        for name in NAMES
        if name not in ("route.other", "nope.x")
        for op, operands in OPERANDS.items()
        for operand in operands
    ]
    checks = [(compile_condition(c), name, op, operand) for c, name, op, operand in conditions]
    for _ in range(150):
        features = _random_features(rng)
        for check, name, op, operand in checks:
            address = address_of(name)
            if isinstance(operand, str) and operand.startswith("{{"):
                rendered = features.at(address_of(operand[2:-2]))
                operand = None if rendered is MISSING else rendered
            expected = _outcome(
                lambda f, a, o, v: bool(_compare(o, f.at(a), v)), features, address, op, operand
            )
            assert _outcome(lambda c, f: bool(c(f)), check, features) == expected, (name, op, operand)


def test_unknown_feature_still_raises_when_read() -> None:
    check = compile_condition(Condition.model_validate({"at": "nope.x", "eq": 1}))
    with pytest.raises(ValueError, match="unknown request feature"):
        check(_random_features(random.Random(1)))


def _world() -> WorldDef:
    return WorldDef.model_validate(
        {
            "id": "w",
            "title": "W",
            "routes": [
                {"method": "GET", "path": "/a/{x}", "rules": [{"respond": {"body": {"x": "{{path.x}}"}}}]},
                {"method": "POST", "path": "/a/{x}", "rules": [{"respond": {"body": {"p": "{{path}}"}}}]},
                {"method": "GET", "path": "/b", "rules": [{"respond": {"body": {"fixed": [1, 2]}}}]},
            ],
        }
    )


def test_route_memo_answers_as_matching_does_and_stays_bounded() -> None:
    world = _world()
    plan = compiled(world)
    first = plan.match_routes("/a/1")
    again = plan.match_routes("/a/1")
    assert [(r.route.method, p) for r, p in first] == [("GET", {"x": "1"}), ("POST", {"x": "1"})]
    assert [(r.route.method, p) for r, p in again] == [(r.route.method, p) for r, p in first]
    assert first[0][1] is not again[0][1]  # each caller gets its own parameters
    first[0][1]["x"] = "changed"
    assert plan.match_routes("/a/1")[0][1] == {"x": "1"}
    assert plan.match_routes("/c") == [] and plan.match_routes("/a/1/2") == []
    for i in range(MATCH_MEMO + 10):
        plan.match_routes(f"/a/{i}")
    assert len(plan.matched) <= MATCH_MEMO
    long = "/a/" + "y" * MATCH_MEMO_PATH
    assert plan.match_routes(long)[0][1] == {"x": "y" * MATCH_MEMO_PATH}
    assert long not in plan.matched
    session = WorldSession(world, 0)
    assert session.send(HttpRequest("GET", "/a/zz")).body == {"x": "zz"}
    assert session.send(HttpRequest("GET", "/a/zz")).body == {"x": "zz"}


def test_parsed_urls_are_the_callers_own() -> None:
    first = parse_url("http://localhost:9001/v3/items?page=2&x=")
    assert first == ("localhost:9001", "/v3/items", {"page": "2", "x": ""}, "page=2&x=")
    first.query["page"] = "9"
    assert parse_url("http://localhost:9001/v3/items?page=2&x=").query == {"page": "2", "x": ""}
    assert parse_url("items") == ("", "/items", {}, "")
    long = "/p?" + "a=1&" * 1000
    assert parse_url(long).query == {"a": "1"}


def _suffix_reference(seed: int, literal: str) -> str:
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    number = int.from_bytes(hashlib.sha256(f"canary|{seed}|{literal}".encode()).digest()[:8], "big")
    chars = []
    for _ in range(6):
        number, digit = divmod(number, 36)
        chars.append(alphabet[digit])
    return "".join(chars)


LITERALS = ["smk-e36f-0db4", "smkgr-2c8a6c-736", "tk_ember_18c65b", "ab-1234-567", "committed"]


def test_codec_fast_paths_agree_with_the_plain_forms() -> None:
    for seed in range(3000):
        literal = LITERALS[seed % len(LITERALS)]
        assert suffix(seed * 7919, literal) == _suffix_reference(seed * 7919, literal)
    codec = CanaryCodec(LITERALS, 5)
    assert codec._escaped == [(re.escape(v), re.escape(codec.forward[v])) for v in codec._kept]
    assert CanaryCodec(reversed(LITERALS), 5).forward == codec.forward  # order of the input does not matter
    salted = codec.forward["tk_ember_18c65b"]
    texts = [
        f"Bearer {salted}",
        "Bearer tk_ember_18c65b",
        f"/v3/x/{codec.forward['smk-e36f-0db4']}",
        "plain",
        "",
    ]
    fresh = CanaryCodec(LITERALS, 5)
    for _ in range(3):  # answered from the memo from the second round on
        assert [codec._unsalt_text(t) for t in texts] == [fresh._unsalt(t) if t else t for t in texts]
    assert codec._unsalt_text(texts[0]) == "Bearer tk_ember_18c65b"
    assert codec._unsalt_text(texts[1]) == "Bearer tk_ember_18c65b~0"
    request = HttpRequest("GET", texts[2], {"authorization": texts[0], "x-n": 3}, None)  # type: ignore[dict-item]
    seen = codec.inbound(request)
    assert seen.headers == {"authorization": "Bearer tk_ember_18c65b", "x-n": 3}
    assert seen.url == "/v3/x/smk-e36f-0db4"
    plain = HttpRequest("GET", "/v3/y", {"accept": "application/json"}, None)
    assert codec.inbound(plain).headers is plain.headers
    # outbound tests for a literal before the regex: the pattern never matches a text that holds none
    rng = random.Random(4)
    pieces = [*LITERALS, *codec.forward.values(), "smk-", "tk_", "~", "-e36f", " ", '"', "x"]
    for _ in range(3000):
        text = "".join(rng.choices(pieces, k=rng.randrange(0, 6)))
        assert codec._holds_literal(text) == any(v in text for v in codec._kept)
        assert not codec._out.search(text) or codec._holds_literal(text), text  # type: ignore[union-attr]


def _two_updates(state: Any, key: str, calls: int, auth: Any) -> Any:
    new = assoc_in(state, [CALLS, key], calls)
    if auth is not None:
        new = assoc_in(new, [TOKENS, auth["token"], "uses"], auth["uses"] + 1)
    return new


def test_counting_a_call_makes_what_the_two_updates_in_turn_made() -> None:
    # dispatch._counted copies the root once for the call count and the bearer's use; the reference
    # is the two assoc_in updates it replaced, on states a bank never holds too.
    rng = random.Random(5)
    tables: list[Any] = [None, {}, {"GET /a": 2, "z": 1}, [1], 3]
    grants: list[Any] = [None, {"uses": 1, "scopes": []}, {"uses": 0}, [0], "g"]
    for _ in range(3000):
        state: dict[str, Any] = {"x": rng.choice([1, {}])}
        if rng.random() < 0.8:
            state[CALLS] = rng.choice(tables)
        if rng.random() < 0.8:
            tokens: Any = rng.choice([{}, {"tk": rng.choice(grants), "other": {}}, ["tk"], 0])
            state[TOKENS] = tokens
        if rng.random() < 0.3:
            state = dict(reversed(list(state.items())))  # another key order
        auth = rng.choice([None, {"token": "tk", "uses": rng.randint(0, 3)}, {"token": "tk"}])
        key, calls = rng.choice(["GET /a", "POST /b"]), rng.randint(1, 5)

        before = repr(state)
        args = (state, key, calls, auth)
        assert _outcome(_counted, *args) == _outcome(_two_updates, *args), args  # repr: keys in order
        assert repr(state) == before  # never mutated


def test_routes_for_picks_the_first_route_of_each_method_and_the_allow_header() -> None:
    plan = compiled(_world())
    for path in ("/a/1", "/b", "/c", "/a/1/2", "/a/"):
        matched = plan.match_routes(path)
        routes = plan.routes_for(path)
        assert [(r, p) for r, p in routes.found] == [(r, p) for r, p in matched]
        for method in ("GET", "POST", "PUT"):
            chosen = [(r, p) for r, p in matched if r.route.method == method]
            assert routes.first.get(method) == (chosen[0] if chosen else None)
        assert routes.allow == ", ".join(sorted({r.route.method for r, _ in matched}))


def test_a_rules_test_answers_as_matches_and_effects_keep_their_split_path() -> None:
    conditions = [
        {"at": "path.x", "eq": "1"},
        {"at": "query.q", "present": True},
        {"any": [{"at": "method", "eq": "GET"}, {"at": "body.n", "gt": 2}]},
    ]
    rules = [{"when": conditions[:n], "respond": {"body": {}}} for n in range(4)]
    effects = [
        {"set": "a.b", "value": 1},
        {"set": "", "incr": "c", "value": 1},
        {"incr": "d.0"},
        {"append": "e"},
        {"mint_id": {"into": "f.g"}},
        {"mint_token": {"value": "tk"}},
    ]
    rules.append({"do": effects, "respond": {"body": {}}})
    world = WorldDef.model_validate(
        {"id": "w", "title": "W", "routes": [{"method": "GET", "path": "/a/{x}", "rules": rules}]}
    )
    (route,) = compiled(world).match_routes("/a/1")
    rng = random.Random(3)
    for rule in route[0].rules:
        assert (rule.test is None) == (not rule.checks)
        for _ in range(200):
            features = _random_features(rng)
            assert (rule.test is None or rule.test(features)) == rule.matches(features)
    for effect, _, path in route[0].rules[-1].effects:
        field = (
            effect.mint_id.into
            if effect.mint_id
            else next((p for p in (effect.set, effect.incr, effect.append) if p is not None), "")
        )
        assert path == split_path(field)


def _random_rules(rng: random.Random) -> list[dict[str, Any]]:
    values = ["a", "b", "c"]
    shapes = [
        lambda: [{"at": "path.x", "eq": rng.choice(values)}],
        lambda: [
            {"at": "path.x", "eq": rng.choice(values)},
            {"at": "header.h", "present": rng.random() < 0.5},
        ],
        lambda: [
            {"at": "path.x", "eq": rng.choice(values)},
            {"at": "header.h", "ne": "1"},
            {"at": "query.q", "present": True},
        ],
        lambda: [{"at": "header.h", "eq": "1"}],
        lambda: [],
        lambda: [{"at": "header.h", "present": True}, {"at": "path.x", "eq": rng.choice(values)}],
        lambda: [{"at": "path.x", "eq": "{{query.q}}"}],
        lambda: [{"at": "path.x", "ne": rng.choice(values)}],
        lambda: [{"at": "path.y", "eq": rng.choice(values)}],  # a second guarded parameter
    ]
    weights = [5, 4, 2, 2, 1, 1, 1, 1, 0.3]
    return [
        {"id": f"r{i}", "when": rng.choices(shapes, weights)[0](), "respond": {"body": {"i": i}}}
        for i in range(rng.randrange(0, 9))
    ]


def test_rules_filed_by_their_path_guard_answer_as_trying_every_rule() -> None:
    # CompiledRoute.trial skips the rules whose first condition reads another value of the path
    # parameter; the first rule that matches must be the one trying every rule finds.
    rng = random.Random(17)
    filed = 0
    for _ in range(300):
        world = WorldDef.model_validate(
            {
                "id": "w",
                "title": "W",
                "routes": [{"method": "GET", "path": "/a/{x}/{y}", "rules": _random_rules(rng)}],
            }
        )
        ((route, _),) = compiled(world).match_routes("/a/1/2")
        filed += route.guard is not None
        for _ in range(30):
            params = {"x": rng.choice(["a", "b", "c", "zz"]), "y": rng.choice(["a", "b"])}
            headers = rng.choice([{}, {"h": "1"}, {"h": "2"}])
            query = rng.choice([{}, {"q": "a"}, {"q": "b"}])
            features = Features("GET", params, query, headers, "none", None, {}, {}, 0)
            tried = [rule.rule.id for rule, test in route.trial(params) if test is None or test(features)]
            every = [rule.rule.id for rule in route.rules if rule.matches(features)]
            assert tried == every, (world, params, headers, query)  # every rule that matches, in order
    assert filed > 150  # most routes were filed
