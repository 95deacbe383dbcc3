"""Authentication: client-credentials minting, bad grants, scope escalation, stale and legacy tokens."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apiflow.authoring.generate.domains import Resource
from apiflow.authoring.generate.draft import (
    CardField,
    Ctx,
    Draft,
    Output,
    Step,
    checkpoint,
    data_flow,
    deprecated,
    entry,
    execute,
    forbid,
    gate_rules,
    hdrs,
    mint_call,
    missing_parent,
    url_re,
)
from apiflow.authoring.generate.init import grant_error, scope_error
from apiflow.authoring.generate.routes import eq, register, rule
from apiflow.authoring.generate.wording import opener, pick, quote_json, quote_request, words


@dataclass(frozen=True, slots=True)
class _Plan:
    """Names and values of one authentication subtask."""

    variant: str  # grant | scope | stale | legacy
    res: Resource
    param: str
    path_t: str
    path: str
    new_id: str
    ref: str

    @property
    def legacy(self) -> str:
        return self.path.replace("/v3/", "/v2/", 1)

    @property
    def ref_key(self) -> str:
        return f"{self.res.singular.replace('-', '_')}_grant_ref"


@dataclass(slots=True)
class _Flow:
    """The golden steps leading to the ledger read, and what the solo seed must hold for them."""

    steps: list[Step]
    symptom: str
    token: str
    seed: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    stale: str | None = None


def _plan(ctx: Ctx) -> _Plan:
    if ctx.k == 1:
        variant = "scope" if ctx.hard else "grant"
    else:
        variant = "scope" if ctx.hard else ctx.rng.choice(("scope", "stale", "legacy"))
    res = ctx.child()
    tbase, base, p = entry(ctx)
    suffix = f"{res.singular}-audit" if variant == "scope" else f"{res.plural}-access"
    return _Plan(variant, res, p, f"{tbase}/{suffix}", f"{base}/{suffix}", ctx.mint.id(res.prefix),
                 ctx.mint.ref(f"{res.prefix}gr"))


def _routes(ctx: Ctx, m: _Plan) -> str:
    """The ledger (elevated scope for the scope variant) and its frozen v2 decoy; returns the decoy id."""
    on, res, scoped = [eq(f"path.{m.param}", ctx.parent.value)], m.res, m.variant == "scope"
    granted = {res.id_field: m.new_id, m.ref_key: m.ref, "status": "granted"}
    ctx.book.add("GET", m.path_t, f"{res.singular.title()} access ledger" + (" (elevated scope)" if scoped else ""),
                 gate_rules(ctx, m.param) + [rule(f"{ctx.key}-ok", on, 200, granted, do=[register(ctx.key)])],
                 scopes=[ctx.dom.elevated_scope] if scoped else [], fallback=missing_parent(ctx))
    legacy_id = ctx.mint.legacy(res.prefix)
    ctx.book.add("GET", m.path_t.replace("/v3/", "/v2/", 1), f"DEPRECATED access ledger (use {m.path_t})",
                 [rule(f"{ctx.key}-legacy", on, 200, {res.camel_id: legacy_id,
                                                      "note": "DEPRECATED v2 ledger; not authoritative"})],
                 bearer=False, deprecated=deprecated(m.path_t), fallback=missing_parent(ctx))
    return legacy_id


def _flow(ctx: Ctx, m: _Plan) -> _Flow:
    """How the token trouble of this variant shows up, and the golden steps that fix it."""
    world, rng, dom = ctx.world, ctx.rng, ctx.dom
    if m.variant == "grant":
        bad = {"grant_type": "password", "client_id": world.client_id, "client_secret": world.client_secret}
        steps = [Step([mint_call(world, form=rng.random() < 0.4)])]
        return _Flow(steps, f"Our token request {quote_request('POST', world.mint_path, bad)} comes back 400 "
                            f"{quote_json(grant_error())}.", world.token)
    if m.variant == "scope":
        steps = [Step([mint_call(world)], essential=False)] if ctx.k == 1 else []
        steps += [Step([execute("GET", m.path, hdrs(ctx))], essential=False),
                  Step([mint_call(world, dom.elevated_scope)])]
        error = quote_json(scope_error(world.mint_path, dom.elevated_scope))
        return _Flow(steps, f"Reading {m.path} with the normal token answers 403 {error}.", world.elevated_token)
    stale = f"tk_{dom.stem}_{'stale' if m.variant == 'stale' else 'legacy'}_{rng.randrange(16**4):04x}"
    record = {"scopes": list(world.base_scopes), "max_uses": 3, "legacy": m.variant == "legacy",
              "uses": 3 if m.variant == "stale" else 0}
    steps = [Step([execute("GET", m.path, hdrs(ctx, stale))], essential=False),
             Step([mint_call(world, form=rng.random() < 0.3)])]
    error = "token_expired" if m.variant == "stale" else "legacy_token_rejected"
    return _Flow(steps, f"The token in my local vars stopped working: {m.path} now answers 401 with error {error}.",
                 world.token, {"access_token": stale}, {"tokens": {stale: record}}, stale)


def _prompt(ctx: Ctx, m: _Plan, symptom: str) -> str:
    res, pid = m.res, ctx.parent.value
    return opener(ctx.rng, ctx.dom.team) + symptom + " " + pick(
        ctx.rng,
        f"Get a working token from the client credentials in the vault and pull the {words(res.singular)} access "
        f"ledger for {ctx.parent.res.singular} {pid}; I need the grant ref and the {res.singular} id it names.",
        f"Sort out auth properly (vault has the client credentials) and read the ledger for {pid}. Report the "
        f"grant ref and which {res.singular} it covers. Please don't use the v2 ledger, it is frozen.",
        f"Fix whatever is wrong with the token and fetch the access ledger of {pid}; send me back the grant ref "
        f"plus the {res.singular} id.",
        f"Once auth works again I only need two things from the access ledger of {pid}: the grant ref and the "
        f"{res.singular} id it names. Credentials are in the vault as usual.",
    )


def draft(ctx: Ctx) -> Draft:
    """Draft an authentication subtask (variant chosen from the step's position and difficulty)."""
    m = _plan(ctx)
    legacy_id = _routes(ctx, m)
    flow = _flow(ctx, m)
    flow.steps.append(Step([execute("GET", m.path, hdrs(ctx, flow.token))], decoy=[execute("GET", m.legacy)]))
    mint_path = ctx.world.mint_path
    g1 = [data_flow(url_re(mint_path), "access_token", 200, "The bearer used on the ledger must be a token minted "
                    "in this trial.", "mint a token", used_in=url_re(m.path, "")),
          data_flow(url_re(m.path), m.ref_key, 200, "The grant ref only the live v3 ledger returns.", "grant ref")]
    card = [CardField(m.ref_key, m.ref, "string", "A canary only the authorised v3 ledger response carries.",
                      "the grant ref"),
            CardField(m.res.id_field, m.new_id, "string", f"The {m.res.singular} the ledger names (the v2 decoy says "
                      f"{legacy_id}).", f"the {m.res.singular} id")]
    return Draft(
        prompt=_prompt(ctx, m, flow.symptom),
        goal=f"get properly authorised and read the access ledger of {ctx.parent.value}",
        card=card, g1=g1, steps=flow.steps, output=Output(m.new_id, m.res, ctx.key),
        seed_locals=flow.seed, state_extra=flow.state, stale=flow.stale,
        checkpoints=[checkpoint("mint_token", url_re(mint_path), "POST", "A correct run mints a token.", status=200)],
        constraints=[forbid("no_legacy_mint", url_re("/v1/oauth/token", ""), "v1 tokens are rejected on v3."),
                     forbid("no_v2_ledger", url_re(m.legacy, ""), "The v2 ledger is frozen.")],
    )
