"""A world definition prepared for dispatch, once per definition and shared by every trial.

Dispatching straight from the pydantic definition redid the same work on every request:
a regex match per route, each condition's operator read off its fields, every response
template walked and copied. All of that is a pure function of the frozen ``WorldDef``, so
it is done once: route patterns, condition checks and template evaluators (static subtrees
become constants). Compiling never fails on a validated world; what rendering would raise
(an unknown directive, a bad default) is still raised when that template is evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from apiflow.world.conditions import Check, all_hold, compile_condition, path_guard
from apiflow.world.features import Features, parse_url
from apiflow.world.http import HttpResponse, body_text
from apiflow.world.memo import IdentityMemo
from apiflow.world.model import Effect, ResponseSpec, Route, Rule, WorldDef
from apiflow.world.spec import openapi_document, spec_content
from apiflow.world.state import split_path
from apiflow.world.template import Constant, Evaluator, compile_template

AUTH_FAILURES = ("missing", "invalid", "legacy", "expired", "insufficient_scope")
_PARAM = re.compile(r"\\\{([A-Za-z_][A-Za-z0-9_]*)\\\}")
MATCH_MEMO = 4096
MATCH_MEMO_PATH = 1024
"""Most paths one compiled world remembers route matches for, and the longest path remembered
(at most a few MB per world)."""


@dataclass(frozen=True, slots=True)
class CompiledResponse:
    """A response spec's status, its headers (names lower-cased) and body as evaluators."""

    status: int
    headers: tuple[tuple[str, Evaluator], ...]
    body: Evaluator
    text: str | None  # the wire text of a constant body, serialised once

    def respond(self, features: Features) -> HttpResponse:
        """The response to one request."""
        # Most responses declare no headers (no comprehension frame then), and a constant body (its
        # text is set) is taken without its evaluator's call.
        headers = {name: str(value(features)) for name, value in self.headers} if self.headers else {}
        body = self.body
        return HttpResponse(
            self.status, headers, body.value if type(body) is Constant else body(features), self.text
        )


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """A rule's conditions as checks, its effects with their value evaluators, its response.

    ``effects`` holds each effect with its value's evaluator and its target path split once
    (``split_path`` of ``set``, ``incr``, ``append`` or ``mint_id.into``; empty for a token).
    ``test`` is what dispatch calls: None for a rule without conditions, the check itself for a
    rule with one (most rules), else their conjunction; each answers what ``matches`` answers.
    """

    rule: Rule
    checks: tuple[Check, ...]
    effects: tuple[tuple[Effect, Evaluator, list[str]], ...]
    response: CompiledResponse
    test: Check | None = None

    def matches(self, features: Features) -> bool:
        """Whether every condition holds (a conjunction, checked in order)."""
        for check in self.checks:  # a loop, not all(<genexpr>): this runs for every rule tried
            if not check(features):
                return False
        return True


Trial = tuple[tuple[CompiledRule, Check | None], ...]
"""Rules to try in order, each with what is left to test of it (None: it matches)."""


@dataclass(frozen=True, slots=True)
class CompiledRoute:
    """A route with its path pattern (None for a path without parameters) and compiled rules.

    Most rules start with ``path.<p> eq <constant>`` (``conditions.path_guard``): a route's rules
    for one resource each, the resource's id in the path. A rule whose guard reads another value of
    ``p`` cannot match (its conjunction stops at that check, before any other is read), so the
    rules are filed by the guard's value (``guarded``), each with the rest of its conditions; a
    request tries the rules filed under its own ``p`` with the unguarded ones, in declaration
    order (``unguarded`` alone when none is filed under it). With more than one guarded
    parameter in a route, ``guard`` is None and every rule is tried (``unguarded``: all of them).
    """

    route: Route
    pattern: re.Pattern[str] | None
    rules: tuple[CompiledRule, ...]
    calls_key: str = ""  # "<METHOD> <path>": the route's key in the state's call counts
    scopes: frozenset[str] = frozenset()  # the bearer scopes the route needs
    guard: str | None = None
    guarded: dict[str, Trial] = field(default_factory=dict)
    unguarded: Trial = ()

    def trial(self, params: dict[str, str]) -> Trial:
        """The rules a request with these path parameters may match, in order, with their tests."""
        if self.guard is None:
            return self.unguarded
        return self.guarded.get(params.get(self.guard), self.unguarded)  # type: ignore[arg-type]

    def match(self, path: str) -> dict[str, str] | None:
        """The path parameters when ``path`` is this route's, else None."""
        if self.pattern is None:
            return {} if path == self.route.path else None
        m = self.pattern.match(path)
        return m.groupdict() if m else None


class PathRoutes(NamedTuple):
    """The routes one path matches: all of them in declaration order, the first for each method,
    and the ``allow`` header of a 405 (the matched methods, sorted)."""

    found: tuple[tuple[CompiledRoute, dict[str, str]], ...]
    first: dict[str, tuple[CompiledRoute, dict[str, str]]]
    allow: str


def _path_routes(found: tuple[tuple[CompiledRoute, dict[str, str]], ...]) -> PathRoutes:
    first: dict[str, tuple[CompiledRoute, dict[str, str]]] = {}
    for entry in found:
        first.setdefault(entry[0].route.method, entry)
    return PathRoutes(found, first, ", ".join(sorted(first)))


@dataclass(frozen=True, slots=True)
class CompiledWorld:
    """Everything dispatch needs from a world definition, and its spec (shared: nothing mutates it)."""

    netloc: str
    openapi: dict[str, Any]
    spec_content: dict[str, Any]
    routes: RouteIndex
    auth_failures: dict[str, CompiledResponse]
    matched: dict[str, PathRoutes] = field(default_factory=dict)
    """``routes_for``'s answers by path, shared by every trial of the world (bounded: see there)."""

    def routes_for(self, path: str) -> PathRoutes:
        """The routes whose template matches ``path`` (their parameters are shared: copy before use).

        The answer is a pure function of the (frozen) routes and the path, so it is kept per path:
        a grid sends the same paths in every trial of a task. The memo is emptied when it holds
        ``MATCH_MEMO`` paths and keeps no path longer than ``MATCH_MEMO_PATH``, so it never grows
        without bound.
        """
        known = self.matched.get(path)
        if known is not None:
            return known
        known = _path_routes(
            tuple(
                (route, params)
                for route in self.routes.candidates(path)
                if (params := route.match(path)) is not None
            )
        )
        if len(path) <= MATCH_MEMO_PATH:  # a model's path can be long: those are not kept
            if len(self.matched) >= MATCH_MEMO:
                self.matched.clear()
            self.matched[path] = known
        return known

    def match_routes(self, path: str) -> list[tuple[CompiledRoute, dict[str, str]]]:
        """Every route whose template matches ``path``, in declaration order, with its parameters.

        Each caller gets its own parameter dicts.
        """
        return [(route, dict(params)) for route, params in self.routes_for(path).found]


_PREFIX = 2  # leading segments a route is indexed by when they are literal


@dataclass(frozen=True, slots=True)
class RouteIndex:
    """Routes by their number of "/" and, when literal, their first two segments.

    A path parameter never spans a "/", and a literal segment only matches itself, so a path
    can only match the routes filed under its own count and leading segments, or a route whose
    leading segments hold a parameter (``wild``). Trying only those, instead of every route with
    the same count (about 40 per request on ``bank/v1``), was a tenth of dispatch.
    """

    exact: dict[tuple[int, tuple[str, ...]], tuple[tuple[int, CompiledRoute], ...]]
    wild: dict[int, tuple[tuple[int, CompiledRoute], ...]]

    def candidates(self, path: str) -> list[CompiledRoute]:
        """The routes that may match ``path``, in declaration order."""
        segments = path.count("/")
        exact = self.exact.get((segments, tuple(path.split("/", _PREFIX + 1)[1 : _PREFIX + 1])), ())
        wild = self.wild.get(segments, ())
        if not wild:
            return [route for _, route in exact]
        if not exact:
            return [route for _, route in wild]
        return [route for _, route in sorted(exact + wild, key=lambda entry: entry[0])]


def _compile_response(spec: ResponseSpec) -> CompiledResponse:
    headers = tuple((name.lower(), compile_template(value)) for name, value in spec.headers.items())
    body = compile_template(spec.text if spec.text is not None else spec.body)
    text = body_text(body.value) if isinstance(body, Constant) else None
    return CompiledResponse(spec.status, headers, body, text)


def _effect_path(effect: Effect) -> list[str]:
    """The state path the effect writes, split once (the field ``dispatch._apply`` takes, in its order)."""
    if effect.mint_id is not None:
        return split_path(effect.mint_id.into)
    for path in (effect.set, effect.incr, effect.append):
        if path is not None:
            return split_path(path)
    return []


def _compile_rule(rule: Rule) -> CompiledRule:
    checks = tuple(compile_condition(c) for c in rule.when)
    return CompiledRule(
        rule=rule,
        checks=checks,
        effects=tuple((e, compile_template(e.value), _effect_path(e)) for e in rule.do),
        response=_compile_response(rule.respond),
        test=_conjunction(checks),
    )


def _path_pattern(path: str) -> re.Pattern[str] | None:
    if "{" not in path:
        return None
    return re.compile("^" + _PARAM.sub(r"(?P<\1>[^/]+)", re.escape(path)) + "$")


def _conjunction(checks: tuple[Check, ...]) -> Check | None:
    return all_hold(checks) if checks else None


def _filed(rules: tuple[CompiledRule, ...]) -> tuple[str | None, dict[str, Trial], Trial]:
    """``CompiledRoute``'s ``guard``, ``guarded`` and ``unguarded`` for these rules."""
    guards = [path_guard(r.rule.when[0]) if r.rule.when else None for r in rules]
    names = {g[0] for g in guards if g is not None}
    if len(names) != 1:
        return None, {}, tuple((r, r.test) for r in rules)
    guarded: dict[str, list[tuple[CompiledRule, Check | None]]] = {}
    unguarded: list[tuple[CompiledRule, Check | None]] = []
    for rule, guard in zip(rules, guards, strict=True):
        if guard is None:  # tried under every value, in its place
            for trial in guarded.values():
                trial.append((rule, rule.test))
            unguarded.append((rule, rule.test))
        else:
            trial = guarded.setdefault(guard[1], list(unguarded))
            trial.append((rule, _conjunction(rule.checks[1:])))
    return names.pop(), {value: tuple(trial) for value, trial in guarded.items()}, tuple(unguarded)


def _compile_route(route: Route) -> CompiledRoute:
    rules = tuple(_compile_rule(r) for r in route.rules)
    guard, guarded, unguarded = _filed(rules)
    return CompiledRoute(
        route=route,
        pattern=_path_pattern(route.path),
        rules=rules,
        calls_key=f"{route.method} {route.path}",
        scopes=frozenset(route.auth.scopes) if route.auth is not None else frozenset(),
        guard=guard,
        guarded=guarded,
        unguarded=unguarded,
    )


def _route_index(routes: list[Route]) -> RouteIndex:
    """Compile the routes and file each by segment count and literal leading segments."""
    exact: dict[tuple[int, tuple[str, ...]], list[tuple[int, CompiledRoute]]] = {}
    wild: dict[int, list[tuple[int, CompiledRoute]]] = {}
    for index, route in enumerate(routes):
        entry = (index, _compile_route(route))
        segments = route.path.count("/")
        prefix = tuple(route.path.split("/", _PREFIX + 1)[1 : _PREFIX + 1])
        if any("{" in part for part in prefix):
            wild.setdefault(segments, []).append(entry)
        else:
            exact.setdefault((segments, prefix), []).append(entry)
    return RouteIndex(
        exact={key: tuple(group) for key, group in exact.items()},
        wild={key: tuple(group) for key, group in wild.items()},
    )


def compile_world(world: WorldDef) -> CompiledWorld:
    """Compile a world definition for dispatch."""
    return CompiledWorld(
        netloc=parse_url(world.server).netloc,
        openapi=openapi_document(world),
        spec_content=spec_content(world),
        routes=_route_index(world.routes),
        auth_failures={name: _compile_response(getattr(world.auth, name)) for name in AUTH_FAILURES},
    )


# A WorldDef is frozen, so its compiled form never goes stale; it leaves with its world.
_COMPILED: IdentityMemo[WorldDef, CompiledWorld] = IdentityMemo()


def compiled(world: WorldDef) -> CompiledWorld:
    """The compiled form of ``world``, compiled on first use."""
    return _COMPILED.get(world, compile_world)
