"""What a capability axis produces for one subtask, and the helpers axes share.

An axis is a function ``(ctx) -> Draft``: it adds routes and rules to the world's route
book, may add initial world state, and returns the subtask's prompt, card, G1
predicates, diagnostics, golden steps (with decoys) and the identifier it plants for
the next step (``Output``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from apiflow.authoring.generate.domains import Domain, Metric, Resource
from apiflow.authoring.generate.routes import RouteBook
from apiflow.authoring.generate.values import Minter


@dataclass(frozen=True, slots=True)
class Output:
    """An identifier a step plants for the next one (value, its resource, the variable name)."""

    value: str
    res: Resource
    key: str  # state registration key (``s05``); "" for the always-present tenant root

    @property
    def var(self) -> str:
        """Local variable name a solo seed uses for it."""
        return self.res.id_field


@dataclass(slots=True)
class World:
    """Facts fixed when a world is initialised."""

    wid: str
    dom: Domain
    mint_path: str
    client_id: str
    client_secret: str
    token: str
    elevated_token: str
    legacy_token: str
    base_scopes: list[str]


@dataclass(slots=True)
class Ctx:
    """Everything an axis needs to draft step ``k``."""

    k: int
    axis: str
    difficulty: str
    rng: random.Random
    world: World
    mint: Minter
    book: RouteBook
    state: dict[str, Any]
    parent: Output
    used_res: list[str]

    @property
    def dom(self) -> Domain:
        """The world's domain vocabulary."""
        return self.world.dom

    @property
    def key(self) -> str:
        """This step's registration key."""
        return f"s{self.k:02d}"

    @property
    def hard(self) -> bool:
        """Hard steps stack an extra trap (the tenant header)."""
        return self.difficulty == "hard"

    def auth(self, token: str | None = None) -> dict[str, str]:
        """Headers of a call made with the base (or given) token, plus the tenant header when hard."""
        headers = {"Authorization": f"Bearer {token or self.world.token}"}
        return headers

    def child(self) -> Resource:
        """A resource for this step, rotating through the domain so paths differ."""
        pool = [r for r in self.dom.resources if r.plural not in self.used_res[-3:]]
        res = self.rng.choice(pool or list(self.dom.resources))
        self.used_res.append(res.plural)
        return res

    def metric(self) -> Metric:
        """A metric of this domain."""
        return self.rng.choice(self.dom.metrics)


@dataclass(slots=True)
class CardField:
    """One answer-card field."""

    field: str
    expected: Any
    comparator: str
    explain: str
    quote: str


@dataclass(slots=True)
class Step:
    """A golden step: parallel calls, the decoy alternative, whether skipping it must fail."""

    calls: list[dict[str, Any]]
    decoy: list[dict[str, Any]] | None = None
    essential: bool = True

    def as_data(self) -> dict[str, Any]:
        """The GoldenStep shape."""
        out: dict[str, Any] = {"calls": self.calls}
        if self.decoy is not None:
            out["decoy"] = self.decoy
        out["essential"] = self.essential
        return out


@dataclass(frozen=True, slots=True)
class Detail:
    """A detail of a step's goal an agent cannot do without: the words that pick ``live`` among
    look-alikes (``wrong`` is one of them). Screen evaluation drops ``phrase`` from a chain prompt
    to plant an underspecified cell (``generate/plant.py``); nothing else reads it."""

    phrase: str
    live: str
    wrong: str


@dataclass(slots=True)
class Draft:
    """One subtask as an axis drafted it."""

    prompt: str
    goal: str
    card: list[CardField]
    g1: list[dict[str, Any]]
    steps: list[Step]
    output: Output
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    constraints: list[dict[str, Any]] = field(default_factory=list)
    seed_locals: dict[str, Any] = field(default_factory=dict)
    state_extra: dict[str, Any] = field(default_factory=dict)
    leaves: dict[str, Any] = field(default_factory=dict)
    stale: str | None = None
    detail: Detail | None = None


def execute(method: str, url: str, headers: dict[str, str] | None = None, body: Any = None) -> dict[str, Any]:
    """An ``execute`` golden call."""
    request: dict[str, Any] = {"method": method, "url": url}
    if headers:
        request["headers"] = dict(headers)
    if body is not None:
        request["body"] = body
    return {"name": "execute", "arguments": {"request": request}}


def write_var(name: str, value: Any) -> dict[str, Any]:
    """A ``write`` of a local variable."""
    return {
        "name": "write",
        "arguments": {
            "entity_ref": {"kind": "variable", "id": name},
            "content": {"value": value},
            "scope": "local",
        },
    }


def url_re(path: str, tail: str = r"(?:\?|$)") -> str:
    """A predicate URL regex for ``path`` (escaped, no leading slash, anchored at its end)."""
    return re.escape(path.lstrip("/")) + tail


def data_flow(
    path_re: str,
    key: str,
    status: int,
    explain: str,
    quote: str,
    *,
    stored: bool = False,
    used_in: str | None = None,
) -> dict[str, Any]:
    """A G1 data_flow predicate."""
    return {
        "kind": "data_flow",
        "from_response_url_pattern": path_re,
        "from_body_key": key,
        "from_status": status,
        "must_be_stored": stored,
        "used_in_request_url_pattern": used_in,
        "explain": explain,
        "prompt_quote": quote,
    }


def new_response(path_re: str, method: str, explain: str, quote: str) -> dict[str, Any]:
    """A G1 new_response predicate (solo only; chains drop these)."""
    return {
        "kind": "new_response",
        "url_pattern": path_re,
        "method": method,
        "explain": explain,
        "prompt_quote": quote,
    }


def workspace_value(value: str, explain: str, quote: str) -> dict[str, Any]:
    """A G1 workspace_values predicate."""
    return {"kind": "workspace_values", "value": value, "explain": explain, "prompt_quote": quote}


def checkpoint(cid: str, path_re: str, method: str, explain: str, **extra: Any) -> dict[str, Any]:
    """A diagnostic checkpoint."""
    return {"id": cid, "url_pattern": path_re, "method": method, "explain": explain, **extra}


def forbid(cid: str, path_re: str, explain: str) -> dict[str, Any]:
    """A diagnostic forbid constraint."""
    return {"id": cid, "kind": "forbid", "url_pattern": path_re, "explain": explain}


def mint_call(world: World, scope: str | None = None, *, form: bool = False) -> dict[str, Any]:
    """The client-credentials mint (JSON body, or form text)."""
    body: dict[str, Any] = {
        "grant_type": "client_credentials",
        "client_id": world.client_id,
        "client_secret": world.client_secret,
    }
    if scope:
        body["scope"] = scope
    if form:
        text = "&".join(f"{k}={v.replace(' ', '+')}" for k, v in body.items())
        return execute("POST", world.mint_path, {"Content-Type": "application/x-www-form-urlencoded"}, text)
    return execute("POST", world.mint_path, None, body)


def gate_rules(ctx: Ctx, param: str) -> list[dict[str, Any]]:
    """Rules a step puts first on its entry route: the parent must exist, hard steps need the tenant header."""
    from apiflow.authoring.generate.routes import absent, eq, rule

    parent, dom = ctx.parent, ctx.dom
    out = []
    if parent.key:
        out.append(
            rule(
                f"{ctx.key}-unknown-parent",
                [eq(f"path.{param}", parent.value), absent(f"state.reg.{parent.key}")],
                404,
                {
                    "error": f"{parent.res.singular.replace('-', '_')}_not_found",
                    "hint": f"no {parent.res.singular} {parent.value} exists yet on this server; "
                    f"it is created by the earlier step of this workflow",
                },
            )
        )
    if ctx.hard:
        header = f"header.{tenant_header(dom).lower()}"
        out.append(
            rule(
                f"{ctx.key}-missing-tenant",
                [eq(f"path.{param}", parent.value), absent(header)],
                400,
                {
                    "error": f"missing_{dom.tenant.singular.replace('-', '_')}",
                    "hint": f"send header {tenant_header(dom)} with your {dom.tenant.id_field} "
                    f"(the vault holds {dom.tenant.id_field})",
                },
            )
        )
    return out


def tenant_header(dom: Domain) -> str:
    """``X-<Tenant>-Id``: the hard steps' undocumented required header."""
    return "X-" + "-".join(p.title() for p in dom.tenant.singular.split("-")) + "-Id"


def hdrs(ctx: Ctx, token: str | None = None, **extra: str) -> dict[str, str]:
    """Headers for a call of this step (tenant header included on hard steps)."""
    headers = ctx.auth(token)
    if ctx.hard:
        headers[tenant_header(ctx.dom)] = ctx.dom.tenant_value
    headers.update(extra)
    return headers


def param(res: Resource) -> str:
    """Path parameter name for a resource id."""
    return res.id_field


def entry(ctx: Ctx, version: str = "v3") -> tuple[str, str, str]:
    """``(template_base, concrete_base, param)`` of routes under the parent entity."""
    p = param(ctx.parent.res)
    return (
        f"/{version}/{ctx.parent.res.plural}/{{{p}}}",
        f"/{version}/{ctx.parent.res.plural}/{ctx.parent.value}",
        p,
    )


def missing_parent(ctx: Ctx) -> dict[str, Any]:
    """Fallback of a route under the parent entity: an unknown parent id."""
    from apiflow.authoring.generate.routes import rule

    res = ctx.parent.res
    return rule(
        "unknown-parent",
        [],
        404,
        {
            "error": f"{res.singular.replace('-', '_')}_not_found",
            "hint": f"use a {res.id_field} returned by a live v3 response",
        },
    )


def missing(res: Resource) -> dict[str, Any]:
    """Fallback of a route keyed on a resource's own id."""
    from apiflow.authoring.generate.routes import rule

    return rule(
        "unknown",
        [],
        404,
        {
            "error": f"{res.singular.replace('-', '_')}_not_found",
            "hint": f"use a {res.id_field} returned by a live v3 response",
        },
    )


def deprecated(superseded_by: str) -> dict[str, str]:
    """Deprecation headers of a legacy decoy route."""
    return {
        "sunset": "2025-09-30",
        "superseded_by": superseded_by,
        "warning": f"299 - deprecated; use {superseded_by}",
    }
