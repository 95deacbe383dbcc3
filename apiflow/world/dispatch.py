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
from apiflow.world.features import Features, ParsedUrl, parse_body, parse_url
from apiflow.world.http import HttpRequest, HttpResponse
from apiflow.world.model import Effect, Route, WorldDef
from apiflow.world.state import MISSING, assoc_in, get_in, split_path
from apiflow.world.template import Evaluator

TOKENS = "tokens"  # state table of minted bearer tokens
CALLS = "_calls"  # state table of per-route call counts


class Outcome(NamedTuple):
    """The new state and the response (headers not yet decorated by the transport)."""

    state: dict[str, Any]
    response: HttpResponse
    route: Route | None = None


def _auth_features(state: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    raw = headers.get("authorization", "")
    token = raw[7:].strip() if raw[:7].lower() == "bearer " else None
    grant = get_in(state, [TOKENS, token]) if token else MISSING
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


def _apply(
    state: dict[str, Any], effect: Effect, value: Evaluator, features: Features, nonce: str
) -> dict[str, Any]:
    if effect.mint_id is not None:
        digest = hashlib.sha256(f"{nonce}:{effect.mint_id.into}".encode()).hexdigest()
        return assoc_in(
            state, split_path(effect.mint_id.into), effect.mint_id.prefix + digest[: effect.mint_id.hex]
        )
    if effect.mint_token is not None:
        grant = effect.mint_token
        record = {"scopes": list(grant.scopes), "max_uses": grant.max_uses, "legacy": grant.legacy, "uses": 0}
        return assoc_in(state, [TOKENS, grant.value], record)
    rendered = value(features)
    if effect.set is not None:
        return assoc_in(state, split_path(effect.set), rendered)
    if effect.incr is not None:
        parts = split_path(effect.incr)
        current = get_in(state, parts)
        return assoc_in(state, parts, (0 if current is MISSING else int(current)) + effect.by)
    if effect.append is not None:
        parts = split_path(effect.append)
        current = get_in(state, parts)
        return assoc_in(state, parts, [*([] if current is MISSING else current), rendered])
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
    url = parse_url(request.url)
    if url.netloc and url.netloc not in (plan.netloc, live_netloc):
        raise TransportError("network: ConnectError: All connection attempts failed")
    method = request.method.upper()
    if world.serve_openapi and url.path == "/openapi.json" and method == "GET":
        return Outcome(state, _json(200, plan.openapi))
    candidates = plan.match_routes(url.path)
    if (
        not candidates
        and url.path != "/"
        and url.path.endswith("/")
        and plan.match_routes(url.path.rstrip("/"))
    ):
        query = f"?{url.query_string}" if url.query_string else ""
        location = f"http://{live_netloc}{url.path.rstrip('/')}{query}"
        return Outcome(state, HttpResponse(307, {"location": location}, ""))
    if not candidates:
        return Outcome(state, _json(404, {"detail": "Not Found"}))
    chosen = [(r, p) for r, p in candidates if r.route.method == method]
    if not chosen:
        allow = ", ".join(sorted({r.route.method for r, _ in candidates}))
        return Outcome(state, _json(405, {"detail": "Method Not Allowed"}, {"allow": allow}))
    return _answer(plan, state, request, url, method, *chosen[0], seed)


def _answer(
    plan: CompiledWorld,
    state: dict[str, Any],
    request: HttpRequest,
    url: ParsedUrl,
    method: str,
    compiled_route: CompiledRoute,
    params: dict[str, str],
    seed: int,
) -> Outcome:
    """Steps 6-7 on the chosen route: count the call, check the bearer, fire the first matching rule."""
    route = compiled_route.route
    body_kind, body = parse_body(request.body)
    calls_key = compiled_route.calls_key
    calls = get_in(state, [CALLS, calls_key])
    auth = _auth_features(state, request.headers)
    route_calls = 0 if calls is MISSING else calls
    features = Features(method, params, url.query, request.headers, body_kind, body, auth, state, route_calls)
    state = assoc_in(state, [CALLS, calls_key], features.route_calls + 1)
    failure = _check_bearer(route, auth, compiled_route.scopes)
    if failure is not None:
        return Outcome(state, plan.auth_failures[failure].respond(features), route)
    if route.auth is not None:
        state = assoc_in(state, [TOKENS, auth["token"], "uses"], auth["uses"] + 1)
    for rule in compiled_route.rules:
        if rule.matches(features):
            if rule.effects:
                nonce = f"{seed}:{calls_key}:{features.route_calls}"
                for effect, value in rule.effects:
                    state = _apply(state, effect, value, features, nonce)
                    features = features.with_state(state)
            # The response is rendered after the transition, so it can report the new state.
            return Outcome(state, rule.response.respond(features), route)
    return Outcome(state, _json(404, {"error": "no_matching_mock"}), route)
