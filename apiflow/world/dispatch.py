"""The pure dispatcher: ``(world, state, request, context) -> (state, response)``.

Matching order (docs/design/001-world-as-data.md):
1. host check (only the spec server or the live mock address answer);
2. ``GET /openapi.json`` serves the spec document when the world says so;
3. a trailing slash that would match a route -> 307 to the slash-less live URL;
4. no route template matches the path -> 404 ``{"detail": "Not Found"}``;
5. the path matches but not the method -> 405 with ``allow``;
6. the route's bearer check (missing / unknown / legacy / stale / scope);
7. the route's rules in order; the first whose conditions all hold fires its effects
   and answers; none -> 404 ``{"error": "no_matching_mock"}``.
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

from apiflow.world.compiled import CompiledRoute, CompiledWorld, compiled
from apiflow.world.errors import TransportError
from apiflow.world.features import Features, parse_body, parse_query, split_url
from apiflow.world.http import HttpRequest, HttpResponse
from apiflow.world.model import Effect, Route, WorldDef
from apiflow.world.state import MISSING, assoc_in, get_in
from apiflow.world.template import Constant, Evaluator

TOKENS = "tokens"  # state table of minted bearer tokens
CALLS = "_calls"  # state table of per-route call counts


class Outcome(NamedTuple):
    """The new state and the response (headers not yet decorated by the transport)."""

    state: dict[str, Any]
    response: HttpResponse
    route: Route | None = None


def _auth_features(state: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    raw = headers.get("authorization", "")
    head = raw[:7]
    token = raw[7:].strip() if head == "Bearer " or head.lower() == "bearer " else None
    if not token:
        grant = MISSING
    else:  # get_in(state, [TOKENS, token]), without its call for the plain dict tables
        tokens = state.get(TOKENS, MISSING) if type(state) is dict else None
        grant = tokens.get(token, MISSING) if type(tokens) is dict else get_in(state, [TOKENS, token])
    if grant is MISSING:
        return {"token": token, "known": False, "scopes": [], "legacy": False, "uses": 0}
    return {"token": token, "known": True, **grant}


def _check_bearer(route: Route, auth: dict[str, Any], scopes: frozenset[str] | None = None) -> str | None:
    """The name of the failed auth response, or None when the bearer is good.

    ``scopes`` is ``route.auth.scopes`` as a set when the caller has it (the compiled route does).
    """
    if route.auth is None:
        return None
    if not auth["token"]:
        return "missing"
    if not auth["known"]:
        return "invalid"
    if auth["legacy"]:
        return "legacy"
    max_uses = auth.get("max_uses")
    if max_uses is not None and auth["uses"] >= max_uses:
        return "expired"
    if not (set(route.auth.scopes) if scopes is None else scopes).issubset(auth["scopes"]):
        return "insufficient_scope"
    return None


def _counted(
    state: dict[str, Any], calls_key: str, calls: int, auth: dict[str, Any] | None
) -> dict[str, Any]:
    """``state`` with the route's call count set to ``calls`` and, given the checked bearer's ``auth``,
    that token's ``uses`` counted.

    What ``assoc_in`` makes of the two updates in turn (the same containers copied along both
    paths, the same keys in the same order); when the tables are plain dicts, as a world's are,
    the root is copied once, without ``assoc_in``'s two walks.
    """
    if type(state) is dict:
        counts = state.get(CALLS)
        if type(counts) is dict:
            if auth is None:
                return {**state, CALLS: {**counts, calls_key: calls}}
            token = auth["token"]
            tokens = state.get(TOKENS)
            if type(tokens) is dict:
                grant = tokens.get(token)
                if type(grant) is dict:
                    used = {**grant, "uses": auth["uses"] + 1}
                    return {**state, CALLS: {**counts, calls_key: calls}, TOKENS: {**tokens, token: used}}
    state = assoc_in(state, [CALLS, calls_key], calls)
    if auth is not None:
        state = assoc_in(state, [TOKENS, auth["token"], "uses"], auth["uses"] + 1)
    return state


def _apply(
    state: dict[str, Any], effect: Effect, value: Evaluator, path: list[str], features: Features, nonce: str
) -> dict[str, Any]:
    # ``path`` is the effect's target path, split when the world was compiled.
    if effect.mint_id is not None:
        digest = hashlib.sha256(f"{nonce}:{effect.mint_id.into}".encode()).hexdigest()
        return assoc_in(state, path, effect.mint_id.prefix + digest[: effect.mint_id.hex])
    if effect.mint_token is not None:
        grant = effect.mint_token
        record = {"scopes": list(grant.scopes), "max_uses": grant.max_uses, "legacy": grant.legacy, "uses": 0}
        return assoc_in(state, [TOKENS, grant.value], record)
    rendered = value.value if type(value) is Constant else value(features)
    if effect.set is not None:
        return assoc_in(state, path, rendered)
    if effect.incr is not None:
        current = get_in(state, path)
        return assoc_in(state, path, (0 if current is MISSING else int(current)) + effect.by)
    if effect.append is not None:
        current = get_in(state, path)
        return assoc_in(state, path, [*([] if current is MISSING else current), rendered])
    raise ValueError("an effect needs set, incr, append or mint_token")


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(status, dict(headers or {}), body)


def dispatch(
    world: WorldDef,
    state: dict[str, Any],
    request: HttpRequest,
    live_netloc: str,
    seed: int = 0,
    plan: CompiledWorld | None = None,
) -> Outcome:
    """Answer one request; ``state`` is never mutated, the new state is returned.

    ``plan`` is ``compiled(world)`` when the caller holds it (a session looks it up once, not per request).
    """
    if plan is None:
        plan = compiled(world)
    netloc, path, query_string = split_url(request.url)
    if netloc and netloc not in (plan.netloc, live_netloc):
        raise TransportError("network: ConnectError: All connection attempts failed")
    method = request.method.upper()
    if world.serve_openapi and path == "/openapi.json" and method == "GET":
        return Outcome(state, _json(200, plan.openapi))
    routes = plan.routes_for(path)
    if not routes.found:
        if path != "/" and path.endswith("/") and plan.routes_for(path.rstrip("/")).found:
            tail = f"?{query_string}" if query_string else ""
            location = f"http://{live_netloc}{path.rstrip('/')}{tail}"
            return Outcome(state, HttpResponse(307, {"location": location}, ""))
        return Outcome(state, _json(404, {"detail": "Not Found"}))
    chosen = routes.first.get(method)  # the first route in declaration order with this method
    if chosen is None:
        return Outcome(state, _json(405, {"detail": "Method Not Allowed"}, {"allow": routes.allow}))
    compiled_route, params = chosen
    query = parse_query(query_string) if query_string else {}
    return _answer(plan, state, request, query, method, compiled_route, dict(params), seed)


def _answer(
    plan: CompiledWorld,
    state: dict[str, Any],
    request: HttpRequest,
    query: dict[str, str],
    method: str,
    compiled_route: CompiledRoute,
    params: dict[str, str],
    seed: int,
) -> Outcome:
    """Steps 6-7 on the chosen route: count the call, check the bearer, fire the first matching rule."""
    route = compiled_route.route
    body_kind, body = parse_body(request.body)
    calls_key = compiled_route.calls_key
    counts = state.get(CALLS) if type(state) is dict else None
    calls = counts.get(calls_key, MISSING) if type(counts) is dict else get_in(state, [CALLS, calls_key])
    headers = request.headers
    auth = _auth_features(state, headers)
    route_calls = 0 if calls is MISSING else calls
    # The rules see the state as it was before this call was counted.
    features = Features(method, params, query, headers, body_kind, body, auth, state, route_calls)
    failure = _check_bearer(route, auth, compiled_route.scopes)
    if failure is not None:
        state = _counted(state, calls_key, route_calls + 1, None)
        return Outcome(state, plan.auth_failures[failure].respond(features), route)
    state = _counted(state, calls_key, route_calls + 1, None if route.auth is None else auth)
    for rule, test in compiled_route.trial(params):  # test: what is left to check of the rule
        if test is None or test(features):
            if rule.effects:
                nonce = f"{seed}:{calls_key}:{route_calls}"
                for effect, value, path in rule.effects:
                    state = _apply(state, effect, value, path, features, nonce)
                    features = features.with_state(state)
            # The response is rendered after the transition, so it can report the new state.
            return Outcome(state, rule.response.respond(features), route)
    return Outcome(state, _json(404, {"error": "no_matching_mock"}), route)
