"""A world definition is data: routes, ordered rule tables, responses, state and auth.

Nothing here is executable. Templates (``{{…}}``) and ``$``-directives in response
bodies are interpreted by ``template.py`` from a closed vocabulary, so a third-party
bank can be loaded without trusting it (docs/design/001-world-as-data.md).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from apiflow.world.patterns import check_pattern

_PARAM_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_PATH_LENGTH = 512
"""Longest route path template (bank/v1's longest is 56 characters)."""

ConditionOp = Literal[
    "eq", "ne", "in", "not_in", "present", "type", "matches", "lt", "lte", "gt", "gte",
    "contains", "has_keys", "keys_within",
]
CONDITION_OPS: tuple[str, ...] = ConditionOp.__args__  # type: ignore[attr-defined]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Condition(_Data):
    """One test on a request feature, e.g. ``{at: body.confirm, eq: true}``.

    ``at`` names a feature (``method``, ``path.X``, ``query.X``, ``header.x``, ``body``,
    ``body.a.b``, ``body_kind``, ``auth.*``, ``state.a.b``, ``route.calls``); exactly one
    operator is set. ``any``/``all``/``not`` combine conditions instead.
    """

    at: str | None = None
    eq: Any = None
    ne: Any = None
    in_: list[Any] | None = Field(default=None, alias="in")
    not_in: list[Any] | None = None
    present: bool | None = None
    type: Literal["int", "number", "string", "bool", "object", "list", "null"] | None = None
    matches: str | None = None
    lt: float | None = None
    lte: float | None = None
    gt: float | None = None
    gte: float | None = None
    contains: Any = None
    has_keys: list[str] | None = None
    keys_within: list[str] | None = None
    any: list[Condition] | None = None
    all: list[Condition] | None = None
    not_: Condition | None = Field(default=None, alias="not")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("matches")
    @classmethod
    def _linear_pattern(cls, value: str | None) -> str | None:
        # Refused here, at bank load, rather than on the first request that reaches the rule.
        return None if value is None else check_pattern(value)

    @model_validator(mode="after")
    def _one_operator(self) -> Condition:
        combinators = [n for n in ("any", "all", "not_") if getattr(self, n) is not None]
        ops = [n for n in self.model_fields_set if n not in ("at", "any", "all", "not_")]
        if combinators:
            if self.at is not None or ops or len(combinators) > 1:
                raise ValueError("a combinator (any/all/not) stands alone")
            return self
        if self.at is None or len(ops) != 1:
            raise ValueError(f"a condition needs `at` and exactly one operator, got {sorted(ops)}")
        return self


class Effect(_Data):
    """A state transition applied when a rule fires (in order).

    ``set``/``incr``/``append`` address ``state`` paths (without the ``state.`` prefix);
    ``mint_token`` registers a bearer token (re-minting a value resets its use count).
    """

    set: str | None = None
    incr: str | None = None
    append: str | None = None
    value: Any = None
    by: int = 1
    mint_token: TokenGrant | None = None
    mint_id: MintId | None = None


class MintId(_Data):
    """Store a fresh id ``<prefix><hex>`` at ``into``, derived from the trial seed.

    Derived by hashing (seed, route, call number), never from a random stream, so
    replaying the same requests mints the same ids.
    """

    into: str
    prefix: str = ""
    hex: int = Field(default=8, ge=2, le=32)


class TokenGrant(_Data):
    """A bearer token the world will accept after it is minted."""

    value: str
    scopes: list[str] = Field(default_factory=list)
    max_uses: int | None = None
    legacy: bool = False


class ResponseSpec(_Data):
    """Status, headers and body (JSON, or text when ``text`` is set); all templated."""

    status: int = 200
    headers: dict[str, str] = Field(default_factory=dict)
    body: Any = None
    text: str | None = None


class Rule(_Data):
    """First matching rule of a route answers; ``when`` is a conjunction."""

    id: str = ""
    when: list[Condition] = Field(default_factory=list)
    do: list[Effect] = Field(default_factory=list)
    respond: ResponseSpec


class RouteAuth(_Data):
    """Bearer protection checked before a route's rules."""

    scopes: list[str] = Field(default_factory=list)


class Deprecation(_Data):
    """Headers a deprecated route adds to every response."""

    sunset: str | None = None
    superseded_by: str | None = None
    warning: str | None = None


class Route(_Data):
    """One method + path template with its ordered rule table."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str
    summary: str = ""
    auth: RouteAuth | None = None
    deprecated: Deprecation | None = None
    in_spec: bool = True
    rules: list[Rule]

    @field_validator("path")
    @classmethod
    def _unambiguous_path(cls, value: str) -> str:
        # Dispatch turns the template into a regex (compiled.py): literals escaped, each parameter
        # `[^/]+`. With one parameter per segment that regex cannot backtrack beyond the segment,
        # so matching stays linear; two in one segment (`{a}-{b}`) would be both ambiguous and
        # polynomial in the path length, so a bank may not declare it.
        if len(value) > MAX_PATH_LENGTH:
            raise ValueError(f"route path longer than MAX_PATH_LENGTH={MAX_PATH_LENGTH}")
        if not value.startswith("/"):
            raise ValueError(f"route path {value[:80]!r} does not start with '/'")
        for segment in value.split("/"):
            if len(_PARAM_RE.findall(segment)) > 1:
                raise ValueError(f"route path segment {segment[:80]!r} holds more than one parameter")
        names = _PARAM_RE.findall(value)
        if len(names) != len(set(names)):
            raise ValueError(f"route path {value[:80]!r} repeats a parameter name")
        return value

    @property
    def params(self) -> list[str]:
        """Path parameter names in order."""
        return _PARAM_RE.findall(self.path)


class AuthResponses(_Data):
    """What a protected route answers when the bearer check fails (templated)."""

    missing: ResponseSpec = ResponseSpec(status=401, body={"error": "missing_token"})
    invalid: ResponseSpec = ResponseSpec(status=401, body={"error": "invalid_token"})
    legacy: ResponseSpec = ResponseSpec(status=401, body={"error": "legacy_token_rejected"})
    expired: ResponseSpec = ResponseSpec(status=401, body={"error": "token_expired"})
    insufficient_scope: ResponseSpec = ResponseSpec(status=403, body={"error": "insufficient_scope"})


class WorldDef(_Data):
    """A whole mock API world."""

    id: str
    title: str
    server: str = "http://localhost:9001"
    live_port: int = 48213
    clock_start: str = "2026-06-29T19:31:15Z"
    spec_extra_paths: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    serve_openapi: bool = True
    state: dict[str, Any] = Field(default_factory=dict)
    auth: AuthResponses = AuthResponses()
    routes: list[Route]

    @model_validator(mode="after")
    def _unique_routes(self) -> WorldDef:
        seen: set[tuple[str, str]] = set()
        for route in self.routes:
            key = (route.method, route.path)
            if key in seen:
                raise ValueError(f"route {route.method} {route.path} is declared twice")
            seen.add(key)
        return self


Condition.model_rebuild()
Effect.model_rebuild()
