"""Pagination: cursor, offset/limit with a silent clamp, or Link headers; a stale rollup and a looping legacy feed."""

from __future__ import annotations

from typing import Any

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
from apiflow.bank.generate.routes import eq, register, rule
from apiflow.bank.generate.wording import an, opener, pick, quote_json

CLAMP = 25


def draft(ctx: Ctx) -> Draft:
    """Draft a pagination subtask: walk to the last page for the count, the last id and the closing marker."""
    dom, rng, mint = ctx.dom, ctx.rng, ctx.mint
    res = ctx.child()
    style = {
        "easy": "cursor",
        "medium": rng.choice(("cursor", "offset")),
        "hard": rng.choice(("offset", "link")),
    }[ctx.difficulty]
    tbase, base, p = entry(ctx)
    path_t, path = f"{tbase}/{res.plural}", f"{base}/{res.plural}"
    size = {"cursor": rng.randint(6, 12), "link": rng.randint(5, 9), "offset": CLAMP}[style]
    pages = {"easy": 2, "medium": 3, "hard": rng.randint(3, 4)}[ctx.difficulty]
    total = size * (pages - 1) + rng.randint(1, size)
    stem = mint.id(res.prefix).rsplit("-", 1)[0]
    marker_key = f"closing_{res.singular.replace('-', '_')}_ref"
    marker = mint.ref(f"{res.prefix}z")
    items: list[dict[str, Any]] = [{res.id_field: f"{stem}-{i:03d}"} for i in range(1, total + 1)]
    items[-1] = {**items[-1], marker_key: marker}
    last_id = items[-1][res.id_field]
    ctx.state.setdefault("feeds", {})[ctx.key] = items
    p_eq = eq(f"path.{p}", ctx.parent.value)
    feed = f"{{{{state.feeds.{ctx.key}}}}}"
    rules = gate_rules(ctx, p)
    urls: list[str] = []
    if style == "offset":
        last_off = (total - 1) // CLAMP * CLAMP
        body = {
            res.plural: {
                "$slice": {
                    "of": feed,
                    "offset": "{{query.offset ?? 0}}",
                    "limit": "{{query.limit ?? 25}}",
                    "max": CLAMP,
                }
            },
            "offset": {"$int": "{{query.offset ?? 0}}"},
            "limit": {"$min": ["{{query.limit ?? 25}}", CLAMP]},
            "total": total,
            "note": f"limit is capped at {CLAMP} per page; walk offset to reach total",
        }
        rules.append(
            rule(
                f"{ctx.key}-tail",
                [p_eq, {"at": "query.offset", "gte": total - CLAMP}, {"at": "query.offset", "lt": total}],
                200,
                body,
                do=[register(ctx.key)],
            )
        )
        rules.append(rule(f"{ctx.key}-page", [p_eq], 200, body))
        urls = [f"{path}?offset={o}&limit={CLAMP}" for o in range(0, last_off + 1, CLAMP)]
    else:
        for i in range(pages):
            chunk = {"$slice": {"of": feed, "offset": i * size, "limit": size}}
            last = i == pages - 1
            if style == "cursor":
                cursor = f"cur_{ctx.key}_{i}"
                when = (
                    [p_eq, {"at": "query.cursor", "present": False}]
                    if i == 0
                    else [p_eq, eq("query.cursor", cursor)]
                )
                body = {res.plural: chunk, "next_cursor": None if last else f"cur_{ctx.key}_{i + 1}"}
                urls.append(path if i == 0 else f"{path}?cursor={cursor}")
                headers = None
            else:
                when = (
                    [p_eq, {"any": [{"at": "query.page", "present": False}, eq("query.page", "1")]}]
                    if i == 0
                    else [p_eq, eq("query.page", str(i + 1))]
                )
                body = {res.plural: chunk, "page": i + 1}
                urls.append(path if i == 0 else f"{path}?page={i + 1}")
                headers = (
                    None if last else {"link": f'<http://localhost:9001{path}?page={i + 2}>; rel="next"'}
                )
            rules.append(
                rule(
                    f"{ctx.key}-p{i}",
                    when,
                    200,
                    body,
                    headers=headers,
                    do=[register(ctx.key)] if last else None,
                )
            )
        rules.append(
            rule(
                f"{ctx.key}-bad-page",
                [p_eq],
                400,
                {
                    "error": "invalid_page",
                    "hint": "follow the pagination pointer of the previous page unchanged",
                },
            )
        )
    ctx.book.add(
        "GET",
        path_t,
        f"List {res.plural} of {an(ctx.parent.res.singular)} (paged)",
        rules,
        fallback=missing_parent(ctx),
    )
    stale_total = total - rng.randint(3, 9)
    summary_t, summary = f"{path_t}-summary", f"{path}-summary"
    summary_body = {
        "total": stale_total,
        "as_of": "2026-06-28T00:00:00Z",
        "note": "nightly rollup; lags the live feed",
    }
    ctx.book.add(
        "GET",
        summary_t,
        f"{res.singular.title()} rollup (nightly)",
        [
            rule(
                f"{ctx.key}-summary",
                [p_eq],
                200,
                summary_body,
            )
        ],
        fallback=missing_parent(ctx),
    )
    legacy_t, legacy = path_t.replace("/v3/", "/v2/", 1), path.replace("/v3/", "/v2/", 1)
    legacy_id = mint.legacy(res.prefix)
    ctx.book.add(
        "GET",
        legacy_t,
        f"DEPRECATED {res.singular} feed",
        [
            rule(
                f"{ctx.key}-loop",
                [p_eq],
                200,
                {
                    "items": [{res.camel_id: legacy_id}],
                    "next_cursor": "cur_loop",
                    "note": "DEPRECATED feed; cursor never terminates",
                },
            )
        ],
        bearer=False,
        deprecated=deprecated(path_t),
        fallback=missing_parent(ctx),
    )
    h = hdrs(ctx)
    steps = [Step([execute("GET", u, h)], essential=False) for u in urls[:-1]]
    steps.append(Step([execute("GET", urls[-1], h)], decoy=[execute("GET", summary, h)]))
    how = {
        "cursor": "it pages with a cursor",
        "offset": f"asking for limit=100 silently gives you {CLAMP}",
        "link": "the pages are chained through the Link header",
    }[style]
    prompt = opener(rng, dom.team) + pick(
        rng,
        f"The {res.singular} rollup for {ctx.parent.value} says {stale_total}, but the floor counted more. Walk "
        f"the live {res.plural} feed to the end ({how}) and tell me how many there really are, the id of the last "
        f"one and the closing ref on it.",
        f"Reconciliation for {ctx.parent.res.singular} {ctx.parent.value} is off: our importer stops after the first "
        f"page of {res.plural}. Heads up, {how}, and the nightly summary lags. I need the true count, the last "
        f"{res.singular} id and its closing ref.",
        f"Need a full census of {res.plural} under {ctx.parent.value}. Don't trust the summary endpoint or the "
        f"old v2 feed (its cursor loops forever); {how}. Report the count, the last {res.singular} id and the "
        f"closing ref.",
        f"GET {summary} answers {quote_json(summary_body)}, and finance says that number is wrong. Count the "
        f"{res.plural} of {ctx.parent.value} from the live feed itself ({how}); I need the real count, the last "
        f"{res.singular} id and the closing ref on it.",
    )
    card = [
        CardField(
            f"{res.singular.replace('-', '_')}_count",
            total,
            "numeric",
            f"The live feed holds {total}; the rollup says {stale_total}.",
            "how many there really are",
        ),
        CardField(
            f"last_{res.id_field}",
            last_id,
            "string",
            "Only the last page holds the final item.",
            f"the last {res.singular} id",
        ),
        CardField(marker_key, marker, "string", "A canary on the final item only.", "the closing ref"),
    ]
    return Draft(
        prompt=prompt,
        goal=f"walk the full {res.plural} feed of {ctx.parent.value} to its last page",
        card=card,
        g1=[
            data_flow(
                url_re(path, r"(?:\?|$)"),
                marker_key,
                200,
                "The closing ref sits on the last page only.",
                "the closing ref",
            )
        ],
        steps=steps,
        output=Output(last_id, res, ctx.key),
        checkpoints=[
            checkpoint("walk_pages", url_re(path, r"\?"), "GET", "A correct run follows the pagination.")
        ],
        constraints=[forbid("no_v2_feed", url_re(legacy, ""), "The v2 feed loops forever.")],
    )
