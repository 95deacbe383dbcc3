"""Discovery: find the canonical route among a versioned sprawl of near-duplicates and decoys."""

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
    missing,
    missing_parent,
    new_response,
    url_re,
)
from apiflow.bank.generate.routes import absent, eq, register, rule
from apiflow.bank.generate.wording import an, opener, pick, quote_json, words


def draft(ctx: Ctx) -> Draft:
    """Draft a discovery subtask under the parent entity."""
    dom, rng, mint = ctx.dom, ctx.rng, ctx.mint
    res, metric = ctx.child(), ctx.metric()
    flag = rng.choice(dom.flag_words)
    tbase, base, p = entry(ctx)
    canon_t, canon = f"{tbase}/{res.plural}", f"{base}/{res.plural}"
    legacy_t, legacy = canon_t.replace("/v3/", "/v2/", 1), canon.replace("/v3/", "/v2/", 1)
    near_name = f"{res.singular}-index"
    near_t, near = f"{tbase}/{near_name}", f"{base}/{near_name}"
    target, value = mint.id(res.prefix), mint.number(metric.low, metric.high, metric.decimals)
    others = [mint.id(res.prefix) for _ in range(rng.randint(2, 4))]
    detail_needed = ctx.difficulty == "hard"
    items = [
        {res.id_field: o, flag: False, metric.name: mint.number(metric.low, metric.high, metric.decimals)}
        for o in others
    ]
    flagged: dict = {res.id_field: target, flag: True}
    if not detail_needed:
        flagged[metric.name] = value
    items.insert(rng.randrange(len(items) + 1), flagged)
    legacy_id = mint.legacy(res.prefix)
    do = [{"set": f"{ctx.key}.listed", "value": True}] + ([] if detail_needed else [register(ctx.key)])
    ctx.book.add(
        "GET",
        canon_t,
        f"List {res.plural} of {an(ctx.parent.res.singular)}",
        gate_rules(ctx, p)
        + [
            rule(
                f"{ctx.key}-list",
                [eq(f"path.{p}", ctx.parent.value)],
                200,
                {ctx.parent.res.id_field: ctx.parent.value, res.plural: items},
                do=do,
            )
        ],
        fallback=missing_parent(ctx),
    )
    ctx.book.add(
        "GET",
        legacy_t,
        f"DEPRECATED {res.plural} list (use {canon_t})",
        [
            rule(
                f"{ctx.key}-legacy",
                [eq(f"path.{p}", ctx.parent.value)],
                200,
                {
                    "items": [{res.camel_id: legacy_id, "flagged": True, metric.camel: value + 1}],
                    "note": "DEPRECATED v2 listing; frozen at migration",
                },
            )
        ],
        bearer=False,
        deprecated=deprecated(canon_t),
        fallback=missing_parent(ctx),
    )
    steps = [Step([execute("GET", canon, hdrs(ctx))], decoy=[execute("GET", legacy)])]
    g1 = [
        data_flow(
            url_re(canon),
            res.id_field,
            200,
            f"The flagged {res.singular} must come from the live v3 list; the v2 decoy reports {legacy_id}.",
            f"flagged {words(flag)}",
        )
    ]
    if ctx.difficulty != "easy":
        ctx.book.add(
            "GET",
            near_t,
            f"{res.singular.title()} index (decoy, similar name; not the live list)",
            [
                rule(
                    f"{ctx.key}-near",
                    [eq(f"path.{p}", ctx.parent.value)],
                    200,
                    {"index": [mint.legacy(res.prefix) for _ in range(2)], "note": "search index"},
                )
            ],
            fallback=missing_parent(ctx),
        )
    if detail_needed:
        detail_t, detail = f"/v3/{res.plural}/{{{res.id_field}}}", f"/v3/{res.plural}/{target}"
        ctx.book.add(
            "GET",
            detail_t,
            f"Read one {res.singular}",
            [
                rule(
                    f"{ctx.key}-unlisted",
                    [eq(f"path.{res.id_field}", target), absent(f"state.{ctx.key}.listed")],
                    404,
                    {
                        "error": f"{res.singular.replace('-', '_')}_not_found",
                        "hint": f"list the {res.plural} of {ctx.parent.value} first",
                    },
                ),
                rule(
                    f"{ctx.key}-detail",
                    [eq(f"path.{res.id_field}", target)],
                    200,
                    {res.id_field: target, flag: True, metric.name: value},
                    do=[register(ctx.key)],
                ),
            ],
            fallback=missing(res),
        )
        steps.append(Step([execute("GET", detail, ctx.auth())]))
        g1.append(
            data_flow(
                url_re(detail),
                metric.name,
                200,
                f"The {words(metric.name)} is only on the live {res.singular} record.",
                words(metric.name),
            )
        )
    else:
        g1.append(
            new_response(url_re(canon), "GET", "Proves the live list was read.", f"flagged {words(flag)}")
        )
    card = [
        CardField(
            f"flagged_{res.id_field}",
            target,
            "string",
            f"The {res.singular} flagged {flag} on the live v3 list (not the decoy {legacy_id}).",
            f"which {res.singular} is flagged",
        ),
        CardField(
            metric.name,
            value,
            "numeric",
            f"Its {words(metric.name)} as the live API reports it.",
            words(metric.name),
        ),
    ]
    stale_view = quote_json({"items": [{res.camel_id: legacy_id, "flagged": True}]})
    prompt = opener(rng, dom.team) + pick(
        rng,
        f"The {dom.team} dashboard still lists {legacy_id} as the {res.singular} flagged {words(flag)} under "
        f"{ctx.parent.res.singular} {ctx.parent.value}, but that comes from the old v2 listing ({stale_view}). "
        f"Find the {res.singular} that is really flagged {flag} on the current API and give me its id and its "
        f"{words(metric.name)}.",
        f"Somebody pulled {res.plural} for {ctx.parent.res.singular} {ctx.parent.value} from a v2 route and got "
        f"{stale_view}, which nobody on the floor recognises. Work out which route is the live one, find the "
        f"{res.singular} flagged {flag} there, and report its id and {words(metric.name)}.",
        f"Our sync job reads {res.plural} of {ctx.parent.value} and keeps surfacing {legacy_id} as {words(flag)}. "
        f"I suspect it is hitting a deprecated or look-alike route. Use the spec to find the canonical "
        f"listing, then tell me the {res.singular} flagged {flag} and its {words(metric.name)}.",
        f"Before we wire {res.plural} of {ctx.parent.value} into the {dom.team} report: the spec has several "
        f"look-alike routes for them and at least one is deprecated. Pick the canonical one, find the "
        f"{res.singular} flagged {flag}, and tell me its id and {words(metric.name)}.",
    )
    return Draft(
        prompt=prompt,
        goal=f"find the {res.singular} flagged {words(flag)} under {ctx.parent.value} on the live v3 listing",
        card=card,
        g1=g1,
        steps=steps,
        output=Output(target, res, ctx.key),
        checkpoints=[
            checkpoint(
                f"list_{res.plural.replace('-', '_')}",
                url_re(canon),
                "GET",
                "A correct run reads the canonical v3 listing.",
            )
        ],
        constraints=[
            forbid(
                f"no_v2_{res.plural.replace('-', '_')}",
                url_re(legacy, ""),
                "The deprecated v2 listing is frozen and reports a decoy id.",
            )
        ]
        + [forbid("no_look_alike", url_re(near, ""), "A look-alike index, not the live list.")]
        * (ctx.difficulty != "easy"),
    )
