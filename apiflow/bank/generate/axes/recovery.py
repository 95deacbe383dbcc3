"""Error recovery: 429 + Retry-After then a retry header; a 500 that needs an undocumented header."""

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
    missing_parent,
    url_re,
)
from apiflow.bank.generate.routes import absent, eq, register, rule
from apiflow.bank.generate.wording import opener, pick, quote_json, words


def draft(ctx: Ctx) -> Draft:
    """Draft an error-recovery subtask (throttle, region header, or both)."""
    dom, rng, mint = ctx.dom, ctx.rng, ctx.mint
    res, metric = ctx.child(), ctx.metric()
    tbase, base, p = entry(ctx)
    noun = f"{res.singular}-status"
    path_t, path = f"{tbase}/{noun}", f"{base}/{noun}"
    legacy_t, legacy = path_t.replace("/v3/", "/v2/", 1), path.replace("/v3/", "/v2/", 1)
    kinds = {
        "easy": ["throttle"],
        "medium": [rng.choice(("throttle", "region"))],
        "hard": ["throttle", "region"],
    }[ctx.difficulty]
    new_id, ref = mint.id(res.prefix), mint.ref(f"{res.prefix}s")
    value = mint.number(metric.low, metric.high, metric.decimals)
    retry_h, region_h = dom.retry_header, dom.region_header
    p_eq = eq(f"path.{p}", ctx.parent.value)
    throttle = {
        "error": "rate_limited",
        "request_id": f"rq-{rng.getrandbits(16):04x}",
        "hint": f"Throttled. Honor Retry-After (2 s), then retry the same request with header {retry_h}: 1",
    }
    region = {
        "error": "region_resolution_failed",
        "hint": f"Retrying will not help; supply header {region_h} with your {dom.region_var} (the vault holds it)",
    }
    rules = gate_rules(ctx, p)
    if "throttle" in kinds:
        rules.append(
            rule(
                f"{ctx.key}-throttled",
                [p_eq, {"at": f"header.{retry_h.lower()}", "ne": "1"}],
                429,
                throttle,
                headers={"retry-after": "2"},
            )
        )
    if "region" in kinds:
        rules.append(rule(f"{ctx.key}-no-region", [p_eq, absent(f"header.{region_h.lower()}")], 500, region))
        rules.append(
            rule(
                f"{ctx.key}-bad-region",
                [p_eq, {"at": f"header.{region_h.lower()}", "ne": dom.region_value}],
                404,
                {
                    "error": "region_not_found",
                    "hint": f"{region_h} must be your {dom.region_var} from the vault",
                },
            )
        )
    ref_key = f"{res.singular.replace('-', '_')}_status_ref"
    rules.append(
        rule(
            f"{ctx.key}-ok",
            [p_eq],
            200,
            {res.id_field: new_id, metric.name: value, ref_key: ref, "unit": metric.unit},
            do=[register(ctx.key)],
        )
    )
    ctx.book.add("GET", path_t, f"{res.singular.title()} status", rules, fallback=missing_parent(ctx))
    legacy_id = mint.legacy(res.prefix)
    ctx.book.add(
        "GET",
        legacy_t,
        f"DEPRECATED {res.singular} status (use {path_t})",
        [
            rule(
                f"{ctx.key}-legacy",
                [p_eq],
                200,
                {res.camel_id: legacy_id, "note": "DEPRECATED; cached, no live readings"},
            )
        ],
        bearer=False,
        deprecated=deprecated(path_t),
        fallback=missing_parent(ctx),
    )
    extra: dict[str, str] = {}
    if "throttle" in kinds:
        extra[retry_h] = "1"
    if "region" in kinds:
        extra[region_h] = dom.region_value
    steps = [
        Step([execute("GET", path, hdrs(ctx))], essential=False),
        Step([execute("GET", path, hdrs(ctx, **extra))], decoy=[execute("GET", legacy)]),
    ]
    seen = throttle if kinds[0] == "throttle" else region
    status = 429 if kinds[0] == "throttle" else 500
    prompt = opener(rng, dom.team) + pick(
        rng,
        f"The {res.singular} status check for {ctx.parent.value} keeps failing: GET {path} answers {status} "
        f"{quote_json(seen)}. Get a real reading through and give me the {res.singular} id, its "
        f"{words(metric.name)} and the status ref.",
        f"Monitoring for {ctx.parent.res.singular} {ctx.parent.value} went red: the status endpoint returns "
        f"{status} ({quote_json(seen)}). Recover from it properly (no falling back to the deprecated v2 status) "
        f"and report the {res.singular} id, {words(metric.name)} and status ref.",
        f"Can you pull the live {res.singular} status for {ctx.parent.value}? My script gave up after "
        f"{quote_json(seen)}. I need the {res.singular} id, the {words(metric.name)} and the status ref it returns.",
        f"Since this morning every {res.singular} status read for {ctx.parent.value} fails with {status} "
        f"({quote_json(seen)}). Please get one clean live reading and report the {res.singular} id, "
        f"{words(metric.name)} and status ref.",
    )
    card = [
        CardField(
            res.id_field,
            new_id,
            "string",
            f"From the live status (the v2 decoy says {legacy_id}).",
            f"the {res.singular} id",
        ),
        CardField(metric.name, value, "numeric", "The live reading.", words(metric.name)),
        CardField(
            ref_key, ref, "string", "A canary only the recovered live response carries.", "the status ref"
        ),
    ]
    return Draft(
        prompt=prompt,
        goal=f"get a live {res.singular} status reading for {ctx.parent.value} through the "
        f"{'throttling' if kinds == ['throttle'] else 'errors'}",
        card=card,
        g1=[
            data_flow(
                url_re(path), ref_key, 200, "The ref comes from the recovered live status.", "status ref"
            )
        ],
        steps=steps,
        output=Output(new_id, res, ctx.key),
        checkpoints=[
            checkpoint(
                "recovered_status",
                url_re(path),
                "GET",
                "A correct run gets a 200 after recovering.",
                status=200,
            )
        ],
        constraints=[
            forbid("no_v2_status", url_re(legacy, ""), "The v2 status is cached and has no readings.")
        ]
        + [
            {
                "id": "retry_header",
                "kind": "require",
                "url_pattern": url_re(path),
                "header": retry_h,
                "explain": "The throttle is lifted only with the retry header.",
            }
        ]
        * ("throttle" in kinds),
    )
