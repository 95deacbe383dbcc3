"""Pagination: cursor, offset/limit with a silent clamp, or Link headers; a stale rollup and a looping legacy feed."""

from __future__ import annotations

from dataclasses import dataclass
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
    missing_parent,
    url_re,
)
from apiflow.authoring.generate.routes import eq, register, rule
from apiflow.authoring.generate.wording import an, opener, pick, quote_json

CLAMP = 25


@dataclass(frozen=True, slots=True)
class _Plan:
    """Names and values of one pagination subtask."""

    res: Resource
    style: str
    param: str
    path_t: str
    path: str
    size: int
    pages: int
    total: int
    marker_key: str
    marker: str
    last_id: str

    @property
    def summary(self) -> str:
        return f"{self.path}-summary"

    @property
    def legacy(self) -> str:
        return self.path.replace("/v3/", "/v2/", 1)


def _plan(ctx: Ctx) -> _Plan:
    rng, mint, res = ctx.rng, ctx.mint, ctx.child()
    # Every option is drawn (the dicts are built whole) so the stream does not depend on difficulty.
    style = {"easy": "cursor", "medium": rng.choice(("cursor", "offset")),
             "hard": rng.choice(("offset", "link"))}[ctx.difficulty]
    tbase, base, p = entry(ctx)
    size = {"cursor": rng.randint(6, 12), "link": rng.randint(5, 9), "offset": CLAMP}[style]
    pages = {"easy": 2, "medium": 3, "hard": rng.randint(3, 4)}[ctx.difficulty]
    total = size * (pages - 1) + rng.randint(1, size)
    stem = mint.id(res.prefix).rsplit("-", 1)[0]
    marker_key = f"closing_{res.singular.replace('-', '_')}_ref"
    marker = mint.ref(f"{res.prefix}z")
    items: list[dict[str, Any]] = [{res.id_field: f"{stem}-{i:03d}"} for i in range(1, total + 1)]
    items[-1] = {**items[-1], marker_key: marker}
    ctx.state.setdefault("feeds", {})[ctx.key] = items
    return _Plan(res, style, p, f"{tbase}/{res.plural}", f"{base}/{res.plural}", size, pages, total, marker_key,
                 marker, items[-1][res.id_field])


def _offset_rules(ctx: Ctx, m: _Plan, on_parent: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    feed = f"{{{{state.feeds.{ctx.key}}}}}"
    body = {
        m.res.plural: {"$slice": {"of": feed, "offset": "{{query.offset ?? 0}}", "limit": "{{query.limit ?? 25}}",
                                  "max": CLAMP}},
        "offset": {"$int": "{{query.offset ?? 0}}"}, "limit": {"$min": ["{{query.limit ?? 25}}", CLAMP]},
        "total": m.total, "note": f"limit is capped at {CLAMP} per page; walk offset to reach total",
    }
    tail = [on_parent, {"at": "query.offset", "gte": m.total - CLAMP}, {"at": "query.offset", "lt": m.total}]
    rules = [rule(f"{ctx.key}-tail", tail, 200, body, do=[register(ctx.key)]),
             rule(f"{ctx.key}-page", [on_parent], 200, body)]
    last_off = (m.total - 1) // CLAMP * CLAMP
    return rules, [f"{m.path}?offset={o}&limit={CLAMP}" for o in range(0, last_off + 1, CLAMP)]


def _page_rules(ctx: Ctx, m: _Plan, on_parent: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Cursor or Link pages: one rule per page, the last one registers the step's output."""
    feed, key, path = f"{{{{state.feeds.{ctx.key}}}}}", ctx.key, m.path
    rules, urls = [], []
    for i in range(m.pages):
        chunk = {"$slice": {"of": feed, "offset": i * m.size, "limit": m.size}}
        last = i == m.pages - 1
        headers = None
        body: dict[str, Any]
        if m.style == "cursor":
            cursor = f"cur_{key}_{i}"
            when = [on_parent, {"at": "query.cursor", "present": False} if i == 0 else eq("query.cursor", cursor)]
            body = {m.res.plural: chunk, "next_cursor": None if last else f"cur_{key}_{i + 1}"}
            urls.append(path if i == 0 else f"{path}?cursor={cursor}")
        else:
            first = {"any": [{"at": "query.page", "present": False}, eq("query.page", "1")]}
            when = [on_parent, first] if i == 0 else [on_parent, eq("query.page", str(i + 1))]
            body = {m.res.plural: chunk, "page": i + 1}
            urls.append(path if i == 0 else f"{path}?page={i + 1}")
            headers = None if last else {"link": f'<http://localhost:9001{path}?page={i + 2}>; rel="next"'}
        rules.append(rule(f"{key}-p{i}", when, 200, body, headers=headers, do=[register(key)] if last else None))
    rules.append(rule(f"{key}-bad-page", [on_parent], 400, {
        "error": "invalid_page", "hint": "follow the pagination pointer of the previous page unchanged"}))
    return rules, urls


def _decoy_routes(ctx: Ctx, m: _Plan, on_parent: dict[str, Any], stale_total: int) -> dict[str, Any]:
    """The lagging nightly rollup and the never-ending v2 feed; returns the rollup's body."""
    summary_body = {"total": stale_total, "as_of": "2026-06-28T00:00:00Z", "note": "nightly rollup; lags the live feed"}
    ctx.book.add("GET", f"{m.path_t}-summary", f"{m.res.singular.title()} rollup (nightly)",
                 [rule(f"{ctx.key}-summary", [on_parent], 200, summary_body)], fallback=missing_parent(ctx))
    legacy_id = ctx.mint.legacy(m.res.prefix)
    loop = {"items": [{m.res.camel_id: legacy_id}], "next_cursor": "cur_loop",
            "note": "DEPRECATED feed; cursor never terminates"}
    ctx.book.add("GET", m.path_t.replace("/v3/", "/v2/", 1), f"DEPRECATED {m.res.singular} feed",
                 [rule(f"{ctx.key}-loop", [on_parent], 200, loop)],
                 bearer=False, deprecated=deprecated(m.path_t), fallback=missing_parent(ctx))
    return summary_body


def _prompt(ctx: Ctx, m: _Plan, stale_total: int, summary_body: dict[str, Any]) -> str:
    res, pid = m.res, ctx.parent.value
    how = {"cursor": "it pages with a cursor", "offset": f"asking for limit=100 silently gives you {CLAMP}",
           "link": "the pages are chained through the Link header"}[m.style]
    return opener(ctx.rng, ctx.dom.team) + pick(
        ctx.rng,
        f"The {res.singular} rollup for {pid} says {stale_total}, but the floor counted more. Walk the live "
        f"{res.plural} feed to the end ({how}) and tell me how many there really are, the id of the last one and "
        f"the closing ref on it.",
        f"Reconciliation for {ctx.parent.res.singular} {pid} is off: our importer stops after the first page of "
        f"{res.plural}. Heads up, {how}, and the nightly summary lags. I need the true count, the last "
        f"{res.singular} id and its closing ref.",
        f"Need a full census of {res.plural} under {pid}. Don't trust the summary endpoint or the old v2 feed "
        f"(its cursor loops forever); {how}. Report the count, the last {res.singular} id and the closing ref.",
        f"GET {m.summary} answers {quote_json(summary_body)}, and finance says that number is wrong. Count the "
        f"{res.plural} of {pid} from the live feed itself ({how}); I need the real count, the last {res.singular} "
        f"id and the closing ref on it.",
    )


def draft(ctx: Ctx) -> Draft:
    """Draft a pagination subtask: walk to the last page for the count, the last id and the closing marker."""
    m = _plan(ctx)
    on_parent = eq(f"path.{m.param}", ctx.parent.value)
    rules, urls = (_offset_rules if m.style == "offset" else _page_rules)(ctx, m, on_parent)
    ctx.book.add("GET", m.path_t, f"List {m.res.plural} of {an(ctx.parent.res.singular)} (paged)",
                 gate_rules(ctx, m.param) + rules, fallback=missing_parent(ctx))
    stale_total = m.total - ctx.rng.randint(3, 9)
    summary_body = _decoy_routes(ctx, m, on_parent, stale_total)
    h, res = hdrs(ctx), m.res
    steps = [Step([execute("GET", u, h)], essential=False) for u in urls[:-1]]
    steps.append(Step([execute("GET", urls[-1], h)], decoy=[execute("GET", m.summary, h)]))
    card = [
        CardField(f"{res.singular.replace('-', '_')}_count", m.total, "numeric",
                  f"The live feed holds {m.total}; the rollup says {stale_total}.", "how many there really are"),
        CardField(f"last_{res.id_field}", m.last_id, "string", "Only the last page holds the final item.",
                  f"the last {res.singular} id"),
        CardField(m.marker_key, m.marker, "string", "A canary on the final item only.", "the closing ref"),
    ]
    return Draft(
        prompt=_prompt(ctx, m, stale_total, summary_body),
        goal=f"walk the full {res.plural} feed of {ctx.parent.value} to its last page",
        card=card,
        g1=[data_flow(url_re(m.path, r"(?:\?|$)"), m.marker_key, 200, "The closing ref sits on the last page only.",
                      "the closing ref")],
        steps=steps, output=Output(m.last_id, res, ctx.key),
        checkpoints=[checkpoint("walk_pages", url_re(m.path, r"\?"), "GET", "A correct run follows the pagination.")],
        constraints=[forbid("no_v2_feed", url_re(m.legacy, ""), "The v2 feed loops forever.")],
    )
