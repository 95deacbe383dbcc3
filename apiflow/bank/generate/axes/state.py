"""Statefulness: a seeded revision has gone stale; read the live one, write with it, keep the receipt."""

from __future__ import annotations

from apiflow.bank.generate.draft import (
    CardField,
    Ctx,
    Draft,
    Output,
    Step,
    checkpoint,
    data_flow,
    entry,
    execute,
    forbid,
    gate_rules,
    hdrs,
    missing_parent,
    url_re,
    workspace_value,
    write_var,
)
from apiflow.bank.generate.routes import absent, eq, not_, register, rule
from apiflow.bank.generate.wording import an, opener, pick, quote_json


def draft(ctx: Ctx) -> Draft:
    """Draft a statefulness subtask: optimistic concurrency against a stale seeded revision."""
    dom, rng, mint = ctx.dom, ctx.rng, ctx.mint
    res = ctx.child()
    tbase, base, p = entry(ctx)
    status_t, status = f"{tbase}/revision", f"{base}/revision"
    cache_t, cache = f"{tbase}/revision-cache", f"{base}/revision-cache"
    post_t, post = f"{tbase}/{res.plural}", f"{base}/{res.plural}"
    live_rev, stale_rev = mint.ref("rev"), mint.legacy("rev")
    new_id, receipt = mint.id(res.prefix), mint.ref(f"{res.prefix}k")
    word = rng.choice(dom.flag_words)
    var = f"{res.singular.replace('-', '_')}_receipt"
    keep = ctx.difficulty != "easy"
    p_eq = eq(f"path.{p}", ctx.parent.value)
    k = ctx.key
    ctx.book.add(
        "GET",
        status_t,
        f"Current revision of {an(ctx.parent.res.singular)}",
        gate_rules(ctx, p)
        + [
            rule(
                f"{k}-rev",
                [p_eq],
                200,
                {
                    ctx.parent.res.id_field: ctx.parent.value,
                    "revision": live_rev,
                    "condition": word,
                    "updated_by": dom.team,
                },
                do=[{"set": f"{k}.leased", "value": True}],
            )
        ],
        fallback=missing_parent(ctx),
    )
    ctx.book.add(
        "GET",
        cache_t,
        "Revision cache (refreshed hourly, not authoritative)",
        [
            rule(
                f"{k}-cache",
                [p_eq],
                200,
                {
                    ctx.parent.res.id_field: ctx.parent.value,
                    "revision": stale_rev,
                    "note": "cached; may lag the live revision",
                },
            )
        ],
        fallback=missing_parent(ctx),
    )
    stale_error = {
        "error": "stale_revision",
        "hint": f"revision does not match; GET {status} for the current revision",
    }
    ctx.book.add(
        "POST",
        post_t,
        f"Record {an(res.singular)} against the current revision",
        gate_rules(ctx, p)
        + [
            rule(
                f"{k}-no-rev",
                [p_eq, absent("body.revision")],
                428,
                {
                    "error": "precondition_required",
                    "hint": "send the current revision in body field 'revision'",
                },
            ),
            rule(
                f"{k}-stale",
                [p_eq, {"any": [not_(eq("body.revision", live_rev)), absent(f"state.{k}.leased")]}],
                409,
                stale_error,
            ),
            rule(
                f"{k}-ok",
                [p_eq],
                201,
                {res.id_field: new_id, "receipt": receipt, "revision": live_rev},
                do=[register(k)],
            ),
        ],
        fallback=missing_parent(ctx),
    )
    h = hdrs(ctx)
    steps = [
        Step([execute("POST", post, h, {"revision": stale_rev})], essential=False),
        Step([execute("GET", status, h)], decoy=[execute("GET", cache, h)]),
        Step([execute("POST", post, h, {"revision": live_rev})]),
    ]
    g1 = [
        data_flow(
            url_re(status),
            "revision",
            200,
            "The revision written with must be the live one.",
            "current revision",
            used_in=url_re(post, ""),
        ),
        data_flow(
            url_re(post),
            "receipt",
            201,
            "The receipt only a write against the live revision returns.",
            "receipt",
            stored=keep,
        ),
    ]
    if keep:
        steps.append(Step([write_var(var, receipt)]))
        g1.append(
            workspace_value(receipt, "The receipt must be saved for the next shift.", f"save it as {var}")
        )
    ask = f" and save the receipt in a local variable called {var}" if keep else ""
    prompt = opener(rng, dom.team) + pick(
        rng,
        f"Recording {an(res.singular)} on {ctx.parent.value} with the revision from my notes "
        f"({ctx.parent.res.singular.replace('-', '_')}_revision in local vars) now fails with 409 "
        f"{quote_json(stale_error)}. Someone changed it in the meantime. Record it against the current revision"
        f"{ask}, and give me the {res.singular} id and the receipt.",
        f"The {dom.team} says {ctx.parent.value} changed since yesterday, and my write bounced with "
        f"{quote_json(stale_error)}. The revision cache endpoint is not to be trusted. Record the {res.singular} "
        f"against the live revision{ask}; report the {res.singular} id and receipt.",
        f"My saved revision for {ctx.parent.value} is stale (the write answered 409 stale_revision). Get the "
        f"real current revision, record the {res.singular}{ask}, and send me the new id and receipt.",
        f"Write conflict on {ctx.parent.value}: {quote_json(stale_error)}. Use the live revision (the revision "
        f"cache lags), record the {res.singular}{ask}, and report the id and receipt.",
    )
    card = [
        CardField(
            res.id_field,
            new_id,
            "string",
            "Minted by the write against the live revision.",
            f"the {res.singular} id",
        ),
        CardField("receipt", receipt, "string", "A canary only the accepted write returns.", "the receipt"),
    ]
    return Draft(
        prompt=prompt,
        goal=f"record {an(res.singular)} on {ctx.parent.value} against its live revision"
        + (f", keeping the receipt as {var}" if keep else ""),
        card=card,
        g1=g1,
        steps=steps,
        output=Output(new_id, res, k),
        seed_locals={f"{ctx.parent.res.singular.replace('-', '_')}_revision": stale_rev},
        stale=stale_rev,
        checkpoints=[
            checkpoint("read_live_revision", url_re(status), "GET", "A correct run reads the live revision.")
        ],
        constraints=[forbid("no_revision_cache", url_re(cache, ""), "The cache lags the live revision.")],
    )
