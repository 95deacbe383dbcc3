"""Error recovery: 429 + Retry-After then a retry header; a 500 that needs an undocumented header."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiflow.authoring.generate.domains import Metric, Resource
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
from apiflow.authoring.generate.routes import absent, eq, register, rule
from apiflow.authoring.generate.wording import opener, pick, quote_json, words


@dataclass(frozen=True, slots=True)
class _Plan:
    """Names, values and trap answers of one error-recovery subtask."""

    res: Resource
    metric: Metric
    param: str
    path_t: str
    path: str
    kinds: list[str]  # throttle and/or region
    new_id: str
    ref: str
    value: float | int
    throttle: dict[str, str]
    region: dict[str, str]

    @property
    def legacy(self) -> str:
        return self.path.replace("/v3/", "/v2/", 1)

    @property
    def ref_key(self) -> str:
        return f"{self.res.singular.replace('-', '_')}_status_ref"


def _plan(ctx: Ctx) -> _Plan:
    dom, rng, mint = ctx.dom, ctx.rng, ctx.mint
    res, metric = ctx.child(), ctx.metric()
    tbase, base, p = entry(ctx)
    # The dict is built whole, so the stream does not depend on the difficulty.
    kinds = {"easy": ["throttle"], "medium": [rng.choice(("throttle", "region"))],
             "hard": ["throttle", "region"]}[ctx.difficulty]
    new_id, ref = mint.id(res.prefix), mint.ref(f"{res.prefix}s")
    value = mint.number(metric.low, metric.high, metric.decimals)
    throttle = {"error": "rate_limited", "request_id": f"rq-{rng.getrandbits(16):04x}",
                "hint": f"Throttled. Honor Retry-After (2 s), then retry the same request with header "
                        f"{dom.retry_header}: 1"}
    region = {"error": "region_resolution_failed", "hint": f"Retrying will not help; supply header "
              f"{dom.region_header} with your {dom.region_var} (the vault holds it)"}
    noun = f"{res.singular}-status"
    return _Plan(res, metric, p, f"{tbase}/{noun}", f"{base}/{noun}", kinds, new_id, ref, value, throttle, region)


def _routes(ctx: Ctx, m: _Plan) -> str:
    """The status route with its traps in order, and its cached v2 decoy; returns the decoy id."""
    dom, key, on = ctx.dom, ctx.key, eq(f"path.{m.param}", ctx.parent.value)
    retry, region = dom.retry_header.lower(), dom.region_header.lower()
    rules = gate_rules(ctx, m.param)
    if "throttle" in m.kinds:
        rules.append(rule(f"{key}-throttled", [on, {"at": f"header.{retry}", "ne": "1"}], 429, m.throttle,
                          headers={"retry-after": "2"}))
    if "region" in m.kinds:
        rules.append(rule(f"{key}-no-region", [on, absent(f"header.{region}")], 500, m.region))
        rules.append(rule(f"{key}-bad-region", [on, {"at": f"header.{region}", "ne": dom.region_value}], 404, {
            "error": "region_not_found", "hint": f"{dom.region_header} must be your {dom.region_var} from the vault"}))
    reading = {m.res.id_field: m.new_id, m.metric.name: m.value, m.ref_key: m.ref, "unit": m.metric.unit}
    rules.append(rule(f"{key}-ok", [on], 200, reading, do=[register(key)]))
    ctx.book.add("GET", m.path_t, f"{m.res.singular.title()} status", rules, fallback=missing_parent(ctx))
    legacy_id = ctx.mint.legacy(m.res.prefix)
    ctx.book.add("GET", m.path_t.replace("/v3/", "/v2/", 1), f"DEPRECATED {m.res.singular} status (use {m.path_t})",
                 [rule(f"{key}-legacy", [on], 200, {m.res.camel_id: legacy_id,
                                                    "note": "DEPRECATED; cached, no live readings"})],
                 bearer=False, deprecated=deprecated(m.path_t), fallback=missing_parent(ctx))
    return legacy_id


def _steps(ctx: Ctx, m: _Plan) -> list[Step]:
    extra: dict[str, str] = {}
    if "throttle" in m.kinds:
        extra[ctx.dom.retry_header] = "1"
    if "region" in m.kinds:
        extra[ctx.dom.region_header] = ctx.dom.region_value
    return [Step([execute("GET", m.path, hdrs(ctx))], essential=False),
            Step([execute("GET", m.path, hdrs(ctx, **extra))], decoy=[execute("GET", m.legacy)])]


def _prompt(ctx: Ctx, m: _Plan) -> str:
    res, pid, metric = m.res, ctx.parent.value, words(m.metric.name)
    seen = quote_json(m.throttle if m.kinds[0] == "throttle" else m.region)
    status = 429 if m.kinds[0] == "throttle" else 500
    return opener(ctx.rng, ctx.dom.team) + pick(
        ctx.rng,
        f"The {res.singular} status check for {pid} keeps failing: GET {m.path} answers {status} {seen}. Get a real "
        f"reading through and give me the {res.singular} id, its {metric} and the status ref.",
        f"Monitoring for {ctx.parent.res.singular} {pid} went red: the status endpoint returns {status} ({seen}). "
        f"Recover from it properly (no falling back to the deprecated v2 status) and report the {res.singular} id, "
        f"{metric} and status ref.",
        f"Can you pull the live {res.singular} status for {pid}? My script gave up after {seen}. I need the "
        f"{res.singular} id, the {metric} and the status ref it returns.",
        f"Since this morning every {res.singular} status read for {pid} fails with {status} ({seen}). Please get "
        f"one clean live reading and report the {res.singular} id, {metric} and status ref.",
    )


def draft(ctx: Ctx) -> Draft:
    """Draft an error-recovery subtask (throttle, region header, or both)."""
    m = _plan(ctx)
    legacy_id = _routes(ctx, m)
    card = [
        CardField(m.res.id_field, m.new_id, "string", f"From the live status (the v2 decoy says {legacy_id}).",
                  f"the {m.res.singular} id"),
        CardField(m.metric.name, m.value, "numeric", "The live reading.", words(m.metric.name)),
        CardField(m.ref_key, m.ref, "string", "A canary only the recovered live response carries.", "the status ref"),
    ]
    retry: list[dict[str, Any]] = [{"id": "retry_header", "kind": "require", "url_pattern": url_re(m.path),
                                    "header": ctx.dom.retry_header,
                                    "explain": "The throttle is lifted only with the retry header."}]
    return Draft(
        prompt=_prompt(ctx, m),
        goal=f"get a live {m.res.singular} status reading for {ctx.parent.value} through the "
        f"{'throttling' if m.kinds == ['throttle'] else 'errors'}",
        card=card,
        g1=[data_flow(url_re(m.path), m.ref_key, 200, "The ref comes from the recovered live status.", "status ref")],
        steps=_steps(ctx, m), output=Output(m.new_id, m.res, ctx.key),
        checkpoints=[checkpoint("recovered_status", url_re(m.path), "GET", "A correct run gets a 200 after recovering.",
                                status=200)],
        constraints=[forbid("no_v2_status", url_re(m.legacy, ""), "The v2 status is cached and has no readings.")]
        + retry * ("throttle" in m.kinds),
    )
