"""Authentication: client-credentials minting, bad grants, scope escalation, stale and legacy tokens."""

from __future__ import annotations

from apiflow.bank.generate.draft import (
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
from apiflow.bank.generate.init import grant_error, scope_error
from apiflow.bank.generate.routes import eq, register, rule
from apiflow.bank.generate.wording import opener, pick, quote_json, quote_request, words


def draft(ctx: Ctx) -> Draft:
    """Draft an authentication subtask (variant chosen from the step's position and difficulty)."""
    dom, rng, mint, world = ctx.dom, ctx.rng, ctx.mint, ctx.world
    if ctx.k == 1:
        variant = "scope" if ctx.hard else "grant"
    else:
        variant = "scope" if ctx.hard else rng.choice(("scope", "stale", "legacy"))
    res = ctx.child()
    tbase, base, p = entry(ctx)
    suffix = f"{res.singular}-audit" if variant == "scope" else f"{res.plural}-access"
    path_t, path = f"{tbase}/{suffix}", f"{base}/{suffix}"
    legacy_t, legacy = path_t.replace("/v3/", "/v2/", 1), path.replace("/v3/", "/v2/", 1)
    new_id, ref = mint.id(res.prefix), mint.ref(f"{res.prefix}gr")
    ref_key = f"{res.singular.replace('-', '_')}_grant_ref"
    ctx.book.add(
        "GET",
        path_t,
        f"{res.singular.title()} access ledger" + (" (elevated scope)" if variant == "scope" else ""),
        gate_rules(ctx, p)
        + [
            rule(
                f"{ctx.key}-ok",
                [eq(f"path.{p}", ctx.parent.value)],
                200,
                {res.id_field: new_id, ref_key: ref, "status": "granted"},
                do=[register(ctx.key)],
            )
        ],
        scopes=[dom.elevated_scope] if variant == "scope" else [],
        fallback=missing_parent(ctx),
    )
    legacy_id = mint.legacy(res.prefix)
    ctx.book.add(
        "GET",
        legacy_t,
        f"DEPRECATED access ledger (use {path_t})",
        [
            rule(
                f"{ctx.key}-legacy",
                [eq(f"path.{p}", ctx.parent.value)],
                200,
                {res.camel_id: legacy_id, "note": "DEPRECATED v2 ledger; not authoritative"},
            )
        ],
        bearer=False,
        deprecated=deprecated(path_t),
        fallback=missing_parent(ctx),
    )
    steps: list[Step] = []
    seed: dict = {}
    state: dict = {}
    stale = None
    token = world.token
    read_decoy = [execute("GET", legacy)]
    if variant == "grant":
        steps.append(Step([mint_call(world, form=rng.random() < 0.4)]))
        bad = {"grant_type": "password", "client_id": world.client_id, "client_secret": world.client_secret}
        symptom = (
            f"Our token request {quote_request('POST', world.mint_path, bad)} comes back 400 "
            f"{quote_json(grant_error())}."
        )
    elif variant == "scope":
        token = world.elevated_token
        if ctx.k == 1:
            steps.append(Step([mint_call(world)], essential=False))
        steps.append(Step([execute("GET", path, hdrs(ctx))], essential=False))
        steps.append(Step([mint_call(world, dom.elevated_scope)]))
        symptom = (
            f"Reading {path} with the normal token answers 403 "
            f"{quote_json(scope_error(world.mint_path, dom.elevated_scope))}."
        )
    else:
        stale = f"tk_{dom.stem}_{'stale' if variant == 'stale' else 'legacy'}_{rng.randrange(16**4):04x}"
        seed["access_token"] = stale
        state["tokens"] = {
            stale: {
                "scopes": list(world.base_scopes),
                "max_uses": 3,
                "legacy": variant == "legacy",
                "uses": 3 if variant == "stale" else 0,
            }
        }
        steps.append(Step([execute("GET", path, hdrs(ctx, stale))], essential=False))
        steps.append(Step([mint_call(world, form=rng.random() < 0.3)]))
        error = "token_expired" if variant == "stale" else "legacy_token_rejected"
        symptom = f"The token in my local vars stopped working: {path} now answers 401 with error {error}."
    steps.append(Step([execute("GET", path, hdrs(ctx, token))], decoy=read_decoy))
    g1 = [
        data_flow(
            url_re(world.mint_path),
            "access_token",
            200,
            "The bearer used on the ledger must be a token minted in this trial.",
            "mint a token",
            used_in=url_re(path, ""),
        ),
        data_flow(url_re(path), ref_key, 200, "The grant ref only the live v3 ledger returns.", "grant ref"),
    ]
    card = [
        CardField(
            ref_key,
            ref,
            "string",
            "A canary only the authorised v3 ledger response carries.",
            "the grant ref",
        ),
        CardField(
            res.id_field,
            new_id,
            "string",
            f"The {res.singular} the ledger names (the v2 decoy says {legacy_id}).",
            f"the {res.singular} id",
        ),
    ]
    prompt = (
        opener(rng, dom.team)
        + symptom
        + " "
        + pick(
            rng,
            f"Get a working token from the client credentials in the vault and pull the {words(res.singular)} access "
            f"ledger for {ctx.parent.res.singular} {ctx.parent.value}; I need the grant ref and the {res.singular} id "
            f"it names.",
            f"Sort out auth properly (vault has the client credentials) and read the ledger for {ctx.parent.value}. "
            f"Report the grant ref and which {res.singular} it covers. Please don't use the v2 ledger, it is frozen.",
            f"Fix whatever is wrong with the token and fetch the access ledger of {ctx.parent.value}; send me back the "
            f"grant ref plus the {res.singular} id.",
            f"Once auth works again I only need two things from the access ledger of {ctx.parent.value}: the grant "
            f"ref and the {res.singular} id it names. Credentials are in the vault as usual.",
        )
    )
    return Draft(
        prompt=prompt,
        goal=f"get properly authorised and read the access ledger of {ctx.parent.value}",
        card=card,
        g1=g1,
        steps=steps,
        output=Output(new_id, res, ctx.key),
        seed_locals=seed,
        state_extra=state,
        stale=stale,
        checkpoints=[
            checkpoint(
                "mint_token", url_re(world.mint_path), "POST", "A correct run mints a token.", status=200
            )
        ],
        constraints=[
            forbid("no_legacy_mint", url_re("/v1/oauth/token", ""), "v1 tokens are rejected on v3."),
            forbid("no_v2_ledger", url_re(legacy, ""), "The v2 ledger is frozen."),
        ],
    )
