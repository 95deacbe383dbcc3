"""Schema repair: a strict create that answers 422s (missing, drift, type, structure, enum) + a loose decoy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiflow.authoring.generate.domains import Domain, Metric, Resource
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
from apiflow.authoring.generate.routes import eq, not_, register, rule
from apiflow.authoring.generate.wording import an, opener, pick, quote_json, quote_request, words

STATUS_WORDS = ("scheduled", "queued", "accepted", "booked")


@dataclass(frozen=True, slots=True)
class _Plan:
    """Names, values and the broken/good bodies of one schema-repair subtask."""

    dom: Domain
    res: Resource
    metric: Metric
    param: str
    path_t: str
    path: str
    kind: str
    amount: int
    window: dict[str, Any]
    nested: bool
    drifted: bool
    new_id: str
    status: str

    @property
    def required(self) -> list[str]:
        return [self.dom.enum_field, self.metric.camel] + (["window"] if self.nested else [])

    @property
    def allowed(self) -> str:
        return "|".join(self.dom.enum_values)

    @property
    def good(self) -> dict[str, Any]:
        body: dict[str, Any] = {self.dom.enum_field: self.kind, self.metric.camel: self.amount}
        if self.nested:
            body["window"] = self.window
        return body

    @property
    def broken(self) -> dict[str, Any]:
        """The body the ticket quotes: wrong enum, and (medium/hard) snake_case drift, a string number, flat window."""
        body: dict[str, Any] = {self.dom.enum_field: self.dom.enum_wrong, self.metric.camel: self.amount}
        if self.drifted:
            body = {self.dom.enum_field: self.dom.enum_wrong, self.metric.name: str(self.amount)}
        if self.nested:
            body[f"window_{self.window['unit']}"] = self.window["value"]
        return body

    def drift_error(self) -> dict[str, Any]:
        m = self.metric
        return {"error": "unknown_field", "field": m.name,
                "hint": f"field name drift: this endpoint expects '{m.camel}' (camelCase), not '{m.name}'"}

    def missing_error(self) -> dict[str, Any]:
        need = f"{', '.join(self.required)} are required" + (
            " (window is an object {value:int, unit})" if self.nested else "")
        return {"error": "missing_required", "fields": self.required, "hint": need}

    def enum_error(self, value: str) -> dict[str, Any]:
        return {"error": "invalid_enum", "field": self.dom.enum_field,
                "hint": f"{self.dom.enum_field} '{value}' is invalid; use one of {self.allowed}"}

    def first_error(self) -> dict[str, Any]:
        """The 422 the broken body really gets (mirrors the rule order of the strict route)."""
        if self.metric.name in self.broken:
            return self.drift_error()
        if not all(k in self.broken for k in self.required):
            return self.missing_error()
        return self.enum_error(self.broken[self.dom.enum_field])


def _plan(ctx: Ctx) -> _Plan:
    dom, rng, mint = ctx.dom, ctx.rng, ctx.mint
    res = ctx.child()
    # The drift trap needs a snake name that differs from its camelCase spelling.
    metric = rng.choice([m for m in dom.metrics if m.camel != m.name] or list(dom.metrics))
    tbase, base, p = entry(ctx)
    kind = rng.choice(dom.enum_values)
    amount = int(mint.count(int(max(1, metric.low)), int(max(metric.low + 5, metric.high))))
    window: dict[str, Any] = {"value": rng.choice((15, 20, 30, 45, 60, 90)), "unit": rng.choice(("minutes", "hours"))}
    new_id, status = mint.id(res.prefix), rng.choice(STATUS_WORDS)
    return _Plan(dom, res, metric, p, f"{tbase}/{res.plural}", f"{base}/{res.plural}", kind, amount, window,
                 ctx.difficulty == "hard", ctx.difficulty != "easy", new_id, status)


def _strict_rules(ctx: Ctx, m: _Plan) -> list[dict[str, Any]]:
    """The strict create's rule table, in the order its 422s are checked."""
    key, on = ctx.key, eq(f"path.{m.param}", ctx.parent.value)
    enum, camel = m.dom.enum_field, m.metric.camel
    rules = [
        rule(f"{key}-not-object", [on, not_({"at": "body", "type": "object"})], 422,
             {"error": "invalid_body", "hint": "send a JSON object body"}),
        rule(f"{key}-drift", [on, {"at": f"body.{m.metric.name}", "present": True}], 422, m.drift_error()),
        rule(f"{key}-missing", [on, not_({"at": "body", "has_keys": m.required})], 422, m.missing_error()),
    ]
    if m.nested:
        rules.append(rule(f"{key}-structure", [on, not_({"at": "body.window", "type": "object"})], 422, {
            "error": "invalid_structure", "hint": "window must be a nested object {value:int, unit:'minutes'|'hours'}, "
            f"not flat 'window_{m.window['unit']}'"}))
        rules.append(rule(f"{key}-window", [on, not_({"at": "body.window.unit", "in": ["minutes", "hours"]})], 422,
                          {"error": "invalid_enum", "field": "window.unit", "hint": "window.unit must be minutes|hours"}))
    created = {m.res.id_field: m.new_id, enum: f"{{{{body.{enum}}}}}", camel: f"{{{{body.{camel}}}}}",
               "status": m.status}
    return rules + [
        rule(f"{key}-type", [on, not_({"at": f"body.{camel}", "type": "int"})], 422, {
            "error": "invalid_type", "field": camel,
            "hint": f"{camel} must be an integer ({m.amount}), not a string ('{m.amount}')"}),
        rule(f"{key}-enum", [on, {"at": f"body.{enum}", "not_in": list(m.dom.enum_values)}], 422,
             m.enum_error(f"{{{{body.{enum}}}}}")),
        rule(f"{key}-created", [on], 201, created, do=[register(key)]),
    ]


def _prompt(ctx: Ctx, m: _Plan, want: str) -> str:
    res, pid = m.res, ctx.parent.value
    broken, error = quote_request("POST", m.path, m.broken), quote_json(m.first_error())
    return opener(ctx.rng, ctx.dom.team) + pick(
        ctx.rng,
        f"Creating {res.plural} under {pid} is failing:\n{broken}\ncame back 422 {error}. I want {want}. Fix the "
        f"request against what the API actually accepts and give me the new {res.singular} id and its status.",
        f"The {ctx.dom.team} script that books {res.plural} broke after the v3 cut-over. It sends\n{broken}\nand gets "
        f"a 422 ({error}). Please get {want} created on v3 (not the old v2 route) and report the id and status it "
        f"comes back with.",
        f"Need {want} for {ctx.parent.res.singular} {pid}. My attempt {broken} is rejected with {error}. Repair it; "
        f"I want the created {res.singular} id and status.",
        f"What I'm after for {pid}: {want}. The payload we have,\n{broken}\nkeeps bouncing with {error}. Get it "
        f"accepted by the strict v3 endpoint and report the new id and status.",
    )


def draft(ctx: Ctx) -> Draft:
    """Draft a schema-repair subtask: fix a broken create body against live 422 hints."""
    m = _plan(ctx)
    res, on = m.res, eq(f"path.{m.param}", ctx.parent.value)
    ctx.book.add("POST", m.path_t, f"Create {an(res.singular)} (strict schema)",
                 gate_rules(ctx, m.param) + _strict_rules(ctx, m), fallback=missing_parent(ctx))
    legacy_id = ctx.mint.legacy(res.prefix)
    loose_t, loose = m.path_t.replace("/v3/", "/v2/", 1), m.path.replace("/v3/", "/v2/", 1)
    ctx.book.add("POST", loose_t, f"DEPRECATED {res.singular} create (v2 schema)", [
        rule(f"{ctx.key}-loose", [on], 200, {"id": legacy_id, "accepted": True,
                                             "note": "deprecated v2 schema; not scheduled"})],
        bearer=False, deprecated=deprecated(m.path_t), fallback=missing_parent(ctx))
    want = f"{an(m.kind)} {res.singular} with {words(m.metric.name)} {m.amount}"
    if m.nested:
        want += f" over a {m.window['value']}-{m.window['unit'][:-1]} window"
    card = [
        CardField(res.id_field, m.new_id, "string", f"Minted only by the strict v3 create (the v2 decoy returns "
                  f"{legacy_id}).", f"the new {res.singular} id"),
        CardField("status", m.status, "string", "Status of the created record.", "its status"),
    ]
    return Draft(
        prompt=_prompt(ctx, m, want),
        goal=f"create {want} under {ctx.parent.value} on the strict v3 route",
        card=card,
        g1=[data_flow(url_re(m.path), res.id_field, 201, "The id must come from the strict v3 create.", "created")],
        steps=[Step([execute("POST", m.path, hdrs(ctx), m.good)], decoy=[execute("POST", loose, None, m.broken)])],
        output=Output(m.new_id, res, ctx.key),
        checkpoints=[checkpoint("strict_create", url_re(m.path), "POST", "A correct run creates on the strict route.",
                                status=201)],
        constraints=[forbid("no_v2_create", url_re(loose, ""), "The v2 create accepts anything and schedules nothing.")],
    )
