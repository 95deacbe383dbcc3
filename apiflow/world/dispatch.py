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
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from apiflow.world.conditions import holds
from apiflow.world.errors import TransportError
from apiflow.world.features import Features, parse_body, parse_url
from apiflow.world.http import HttpRequest, HttpResponse
from apiflow.world.model import Effect, ResponseSpec, Route, WorldDef
from apiflow.world.spec import openapi_document
from apiflow.world.state import MISSING, assoc_in, get_in, split_path
from apiflow.world.template import render

TOKENS = "tokens"  # state table of minted bearer tokens
CALLS = "_calls"  # state table of per-route call counts


@dataclass(frozen=True, slots=True)
class Outcome:
    """The new state and the response (headers not yet decorated by the transport)."""

    state: dict[str, Any]
    response: HttpResponse
    route: Route | None = None


@lru_cache(maxsize=64)
def _netloc(server: str) -> str:
    return parse_url(server).netloc


@lru_cache(maxsize=4096)
def _template_regex(path: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{([A-Za-z_][A-Za-z0-9_]*)\\\}", r"(?P<\1>[^/]+)", re.escape(path))
    return re.compile(f"^{pattern}$")


def _match_routes(world: WorldDef, path: str) -> list[tuple[Route, dict[str, str]]]:
    found = []
    for route in world.routes:
        m = _template_regex(route.path).match(path)
        if m:
            found.append((route, m.groupdict()))
    return found


def _auth_features(state: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    raw = headers.get("authorization", "")
    token = raw[7:].strip() if raw[:7].lower() == "bearer " else None
    grant = get_in(state, [TOKENS, token]) if token else MISSING
    if grant is MISSING:
        return {"token": token, "known": False, "scopes": [], "legacy": False, "uses": 0}
    return {"token": token, "known": True, **grant}


def _check_bearer(route: Route, auth: dict[str, Any]) -> str | None:
    """The name of the failed auth response, or None when the bearer is good."""
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
    if not set(route.auth.scopes) <= set(auth["scopes"]):
        return "insufficient_scope"
    return None


def _apply(state: dict[str, Any], effect: Effect, features: Features, nonce: str) -> dict[str, Any]:
    if effect.mint_id is not None:
        digest = hashlib.sha256(f"{nonce}:{effect.mint_id.into}".encode()).hexdigest()
        return assoc_in(state, split_path(effect.mint_id.into), effect.mint_id.prefix + digest[: effect.mint_id.hex])
    if effect.mint_token is not None:
        grant = effect.mint_token
        record = {"scopes": list(grant.scopes), "max_uses": grant.max_uses, "legacy": grant.legacy, "uses": 0}
        return assoc_in(state, [TOKENS, grant.value], record)
    value = render(effect.value, features)
    if effect.set is not None:
        return assoc_in(state, split_path(effect.set), value)
    if effect.incr is not None:
        parts = split_path(effect.incr)
        current = get_in(state, parts)
        return assoc_in(state, parts, (0 if current is MISSING else int(current)) + effect.by)
    if effect.append is not None:
        parts = split_path(effect.append)
        current = get_in(state, parts)
        return assoc_in(state, parts, [*([] if current is MISSING else current), value])
    raise ValueError("an effect needs set, incr, append or mint_token")


def _respond(spec: ResponseSpec, features: Features) -> HttpResponse:
    headers = {k.lower(): str(render(v, features)) for k, v in spec.headers.items()}
    body = render(spec.text, features) if spec.text is not None else render(spec.body, features)
    return HttpResponse(spec.status, headers, body)


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> HttpResponse:
    return HttpResponse(status, dict(headers or {}), body)


def dispatch(
    world: WorldDef, state: dict[str, Any], request: HttpRequest, live_netloc: str, seed: int = 0
) -> Outcome:
    """Answer one request; ``state`` is never mutated, the new state is returned."""
    url = parse_url(request.url)
    if url.netloc and url.netloc not in (_netloc(world.server), live_netloc):
        raise TransportError("network: ConnectError: All connection attempts failed")
    method = request.method.upper()
    if world.serve_openapi and url.path == "/openapi.json" and method == "GET":
        return Outcome(state, _json(200, openapi_document(world)))
    candidates = _match_routes(world, url.path)
    if not candidates and url.path != "/" and url.path.endswith("/") and _match_routes(world, url.path.rstrip("/")):
        query = f"?{url.query_string}" if url.query_string else ""
        location = f"http://{live_netloc}{url.path.rstrip('/')}{query}"
        return Outcome(state, HttpResponse(307, {"location": location}, ""))
    if not candidates:
        return Outcome(state, _json(404, {"detail": "Not Found"}))
    chosen = [(r, p) for r, p in candidates if r.method == method]
    if not chosen:
        allow = ", ".join(sorted({r.method for r, _ in candidates}))
        return Outcome(state, _json(405, {"detail": "Method Not Allowed"}, {"allow": allow}))
    route, params = chosen[0]
    body_kind, body = parse_body(request.body)
    calls_key = f"{route.method} {route.path}"
    calls = get_in(state, [CALLS, calls_key])
    auth = _auth_features(state, request.headers)
    features = Features(
        method=method, path_params=params, query=url.query, headers=request.headers, body_kind=body_kind,
        body=body, auth=auth, state=state, route_calls=0 if calls is MISSING else calls,
    )
    state = assoc_in(state, [CALLS, calls_key], features.route_calls + 1)
    failure = _check_bearer(route, auth)
    if failure is not None:
        return Outcome(state, _respond(getattr(world.auth, failure), features), route)
    if route.auth is not None:
        state = assoc_in(state, [TOKENS, auth["token"], "uses"], auth["uses"] + 1)
    for rule in route.rules:
        if all(holds(c, features) for c in rule.when):
            for effect in rule.do:
                state = _apply(state, effect, features, f"{seed}:{calls_key}:{features.route_calls}")
                features = Features(**{**_fields(features), "state": state})
            # The response is rendered after the transition, so it can report the new state.
            return Outcome(state, _respond(rule.respond, features), route)
    return Outcome(state, _json(404, {"error": "no_matching_mock"}), route)


def _fields(features: Features) -> dict[str, Any]:
    return {name: getattr(features, name) for name in Features.__slots__}
