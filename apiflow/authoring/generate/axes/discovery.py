"""Discovery: find the canonical route among a versioned sprawl of near-duplicates and decoys."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiflow.authoring.generate.domains import Metric, Resource
from apiflow.authoring.generate.draft import (
    CardField,
    Ctx,
    Detail,
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
from apiflow.authoring.generate.routes import absent, eq, register, rule
from apiflow.authoring.generate.wording import an, opener, pick, quote_json, words


@dataclass(frozen=True, slots=True)
class _Plan:
    """Names and values of one discovery subtask."""

    res: Resource
    metric: Metric
    flag: str
    param: str
    tbase: str
    base: str
    target: str
    value: float | int
    items: list[dict[str, Any]]
    detail_needed: bool

    @property
    def canon_t(self) -> str:
        return f"{self.tbase}/{self.res.plural}"

    @property
    def canon(self) -> str:
        return f"{self.base}/{self.res.plural}"

    @property
    def legacy(self) -> str:
        return self.canon.replace("/v3/", "/v2/", 1)

    @property
    def near(self) -> str:
        return f"{self.base}/{self.res.singular}-index"

    @property
    def detail(self) -> str:
        return f"/v3/{self.res.plural}/{self.target}"


def _plan(ctx: Ctx) -> _Plan:
    rng, mint = ctx.rng, ctx.mint
    res, metric = ctx.child(), ctx.metric()
    flag = rng.choice(ctx.dom.flag_words)
    tbase, base, p = entry(ctx)
    target, value = mint.id(res.prefix), mint.number(metric.low, metric.high, metric.decimals)
    others = [mint.id(res.prefix) for _ in range(rng.randint(2, 4))]
    detail_needed = ctx.difficulty == "hard"
    items = [{res.id_field: o, flag: False, metric.name: mint.number(metric.low, metric.high, metric.decimals)}
             for o in others]
    flagged: dict[str, Any] = {res.id_field: target, flag: True}
    if not detail_needed:
        flagged[metric.name] = value
    items.insert(rng.randrange(len(items) + 1), flagged)
    return _Plan(res, metric, flag, p, tbase, base, target, value, items, detail_needed)


def _list_routes(ctx: Ctx, m: _Plan) -> str:
    """The canonical v3 list, its v2 decoy and (medium/hard) a look-alike index; returns the decoy id."""
    res, key, on_parent = m.res, ctx.key, [eq(f"path.{m.param}", ctx.parent.value)]
    legacy_id = ctx.mint.legacy(res.prefix)
    do = [{"set": f"{key}.listed", "value": True}] + ([] if m.detail_needed else [register(key)])
    listing = {ctx.parent.res.id_field: ctx.parent.value, res.plural: m.items}
    ctx.book.add("GET", m.canon_t, f"List {res.plural} of {an(ctx.parent.res.singular)}",
                 gate_rules(ctx, m.param) + [rule(f"{key}-list", on_parent, 200, listing, do=do)],
                 fallback=missing_parent(ctx))
    frozen = {"items": [{res.camel_id: legacy_id, "flagged": True, m.metric.camel: m.value + 1}],
              "note": "DEPRECATED v2 listing; frozen at migration"}
    ctx.book.add("GET", m.canon_t.replace("/v3/", "/v2/", 1), f"DEPRECATED {res.plural} list (use {m.canon_t})",
                 [rule(f"{key}-legacy", on_parent, 200, frozen)],
                 bearer=False, deprecated=deprecated(m.canon_t), fallback=missing_parent(ctx))
    if ctx.difficulty != "easy":
        index = {"index": [ctx.mint.legacy(res.prefix) for _ in range(2)], "note": "search index"}
        ctx.book.add("GET", f"{m.tbase}/{res.singular}-index",
                     f"{res.singular.title()} index (decoy, similar name; not the live list)",
                     [rule(f"{key}-near", on_parent, 200, index)], fallback=missing_parent(ctx))
    return legacy_id


def _detail_route(ctx: Ctx, m: _Plan) -> None:
    """Hard steps: the metric is only on the record, readable once the list was read."""
    res, key = m.res, ctx.key
    mine = eq(f"path.{res.id_field}", m.target)
    ctx.book.add("GET", f"/v3/{res.plural}/{{{res.id_field}}}", f"Read one {res.singular}", [
        rule(f"{key}-unlisted", [mine, absent(f"state.{key}.listed")], 404, {
            "error": f"{res.singular.replace('-', '_')}_not_found",
            "hint": f"list the {res.plural} of {ctx.parent.value} first"}),
        rule(f"{key}-detail", [mine], 200, {res.id_field: m.target, m.flag: True, m.metric.name: m.value},
             do=[register(key)]),
    ], fallback=missing(res))


def _checks(ctx: Ctx, m: _Plan, legacy_id: str) -> tuple[list[Step], list[dict[str, Any]]]:
    steps = [Step([execute("GET", m.canon, hdrs(ctx))], decoy=[execute("GET", m.legacy)])]
    g1 = [data_flow(url_re(m.canon), m.res.id_field, 200, f"The flagged {m.res.singular} must come from the live "
                    f"v3 list; the v2 decoy reports {legacy_id}.", f"flagged {words(m.flag)}")]
    if m.detail_needed:
        steps.append(Step([execute("GET", m.detail, ctx.auth())]))
        g1.append(data_flow(url_re(m.detail), m.metric.name, 200, f"The {words(m.metric.name)} is only on the "
                            f"live {m.res.singular} record.", words(m.metric.name)))
    else:
        g1.append(new_response(url_re(m.canon), "GET", "Proves the live list was read.", f"flagged {words(m.flag)}"))
    return steps, g1


def _prompt(ctx: Ctx, m: _Plan, legacy_id: str) -> str:
    res, flag, team, pid = m.res, m.flag, ctx.dom.team, ctx.parent.value
    metric = words(m.metric.name)
    stale_view = quote_json({"items": [{res.camel_id: legacy_id, "flagged": True}]})
    return opener(ctx.rng, team) + pick(
        ctx.rng,
        f"The {team} dashboard still lists {legacy_id} as the {res.singular} flagged {words(flag)} under "
        f"{ctx.parent.res.singular} {pid}, but that comes from the old v2 listing ({stale_view}). Find the "
        f"{res.singular} that is really flagged {flag} on the current API and give me its id and its {metric}.",
        f"Somebody pulled {res.plural} for {ctx.parent.res.singular} {pid} from a v2 route and got {stale_view}, "
        f"which nobody on the floor recognises. Work out which route is the live one, find the {res.singular} "
        f"flagged {flag} there, and report its id and {metric}.",
        f"Our sync job reads {res.plural} of {pid} and keeps surfacing {legacy_id} as {words(flag)}. I suspect it "
        f"is hitting a deprecated or look-alike route. Use the spec to find the canonical listing, then tell me "
        f"the {res.singular} flagged {flag} and its {metric}.",
        f"Before we wire {res.plural} of {pid} into the {team} report: the spec has several look-alike routes for "
        f"them and at least one is deprecated. Pick the canonical one, find the {res.singular} flagged {flag}, "
        f"and tell me its id and {metric}.",
    )


def draft(ctx: Ctx) -> Draft:
    """Draft a discovery subtask under the parent entity."""
    m = _plan(ctx)
    res, slug = m.res, m.res.plural.replace("-", "_")
    legacy_id = _list_routes(ctx, m)
    if m.detail_needed:
        _detail_route(ctx, m)
    steps, g1 = _checks(ctx, m, legacy_id)
    card = [
        CardField(f"flagged_{res.id_field}", m.target, "string", f"The {res.singular} flagged {m.flag} on the live "
                  f"v3 list (not the decoy {legacy_id}).", f"which {res.singular} is flagged"),
        CardField(m.metric.name, m.value, "numeric", f"Its {words(m.metric.name)} as the live API reports it.",
                  words(m.metric.name)),
    ]
    look_alike = [forbid("no_look_alike", url_re(m.near, ""), "A look-alike index, not the live list.")]
    flagged = f" flagged {words(m.flag)}"
    sibling = next(i[res.id_field] for i in m.items if i[res.id_field] != m.target)
    return Draft(
        prompt=_prompt(ctx, m, legacy_id),
        goal=f"find the {res.singular}{flagged} under {ctx.parent.value} on the live v3 listing",
        card=card, g1=g1, steps=steps, output=Output(m.target, res, ctx.key),
        detail=Detail(flagged, m.target, sibling),
        checkpoints=[checkpoint(f"list_{slug}", url_re(m.canon), "GET", "A correct run reads the canonical v3 listing.")],
        constraints=[forbid(f"no_v2_{slug}", url_re(m.legacy, ""),
                            "The deprecated v2 listing is frozen and reports a decoy id.")]
        + look_alike * (ctx.difficulty != "easy"),
    )
