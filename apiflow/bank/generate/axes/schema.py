"""Schema repair: a strict create that answers 422s (missing, drift, type, structure, enum) + a loose decoy."""

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
from apiflow.bank.generate.routes import eq, not_, register, rule
from apiflow.bank.generate.wording import an, opener, pick, quote_json, quote_request, words

STATUS_WORDS = ("scheduled", "queued", "accepted", "booked")


def draft(ctx: Ctx) -> Draft:
    """Draft a schema-repair subtask: fix a broken create body against live 422 hints."""
    dom, rng, mint = ctx.dom, ctx.rng, ctx.mint
    res = ctx.child()
    # The drift trap needs a snake name that differs from its camelCase spelling.
    metric = rng.choice([m for m in dom.metrics if m.camel != m.name] or list(dom.metrics))
    tbase, base, p = entry(ctx)
    path_t, path = f"{tbase}/{res.plural}", f"{base}/{res.plural}"
    loose_t, loose = path_t.replace("/v3/", "/v2/", 1), path.replace("/v3/", "/v2/", 1)
    kind = rng.choice(dom.enum_values)
    amount = int(mint.count(int(max(1, metric.low)), int(max(metric.low + 5, metric.high))))
    window: dict[str, Any] = {
        "value": rng.choice((15, 20, 30, 45, 60, 90)),
        "unit": rng.choice(("minutes", "hours")),
    }
    nested = ctx.difficulty == "hard"
    required = [dom.enum_field, metric.camel] + (["window"] if nested else [])
    good: dict[str, Any] = {dom.enum_field: kind, metric.camel: amount}
    if nested:
        good["window"] = window
    broken: dict[str, Any] = {dom.enum_field: dom.enum_wrong, metric.camel: amount}
    if ctx.difficulty != "easy":
        broken = {dom.enum_field: dom.enum_wrong, metric.name: str(amount)}
    if nested:
        broken[f"window_{window['unit']}"] = window["value"]
    new_id, status = mint.id(res.prefix), rng.choice(STATUS_WORDS)
    allowed = "|".join(dom.enum_values)
    p_eq = eq(f"path.{p}", ctx.parent.value)
    need = f"{', '.join(required)} are required" + (
        " (window is an object {value:int, unit})" if nested else ""
    )
    rules = gate_rules(ctx, p) + [
        rule(
            f"{ctx.key}-not-object",
            [p_eq, not_({"at": "body", "type": "object"})],
            422,
            {"error": "invalid_body", "hint": "send a JSON object body"},
        ),
        rule(
            f"{ctx.key}-drift",
            [p_eq, {"at": f"body.{metric.name}", "present": True}],
            422,
            {
                "error": "unknown_field",
                "field": metric.name,
                "hint": f"field name drift: this endpoint expects '{metric.camel}' (camelCase), not '{metric.name}'",
            },
        ),
        rule(
            f"{ctx.key}-missing",
            [p_eq, not_({"at": "body", "has_keys": required})],
            422,
            {"error": "missing_required", "fields": required, "hint": need},
        ),
    ]
    if nested:
        rules.append(
            rule(
                f"{ctx.key}-structure",
                [p_eq, not_({"at": "body.window", "type": "object"})],
                422,
                {
                    "error": "invalid_structure",
                    "hint": "window must be a nested object {value:int, unit:'minutes'|'hours'}, "
                    f"not flat 'window_{window['unit']}'",
                },
            )
        )
        rules.append(
            rule(
                f"{ctx.key}-window",
                [p_eq, not_({"at": "body.window.unit", "in": ["minutes", "hours"]})],
                422,
                {
                    "error": "invalid_enum",
                    "field": "window.unit",
                    "hint": "window.unit must be minutes|hours",
                },
            )
        )
    rules += [
        rule(
            f"{ctx.key}-type",
            [p_eq, not_({"at": f"body.{metric.camel}", "type": "int"})],
            422,
            {
                "error": "invalid_type",
                "field": metric.camel,
                "hint": f"{metric.camel} must be an integer ({amount}), not a string ('{amount}')",
            },
        ),
        rule(
            f"{ctx.key}-enum",
            [p_eq, {"at": f"body.{dom.enum_field}", "not_in": list(dom.enum_values)}],
            422,
            {
                "error": "invalid_enum",
                "field": dom.enum_field,
                "hint": f"{dom.enum_field} '{{{{body.{dom.enum_field}}}}}' is invalid; use one of {allowed}",
            },
        ),
        rule(
            f"{ctx.key}-created",
            [p_eq],
            201,
            {
                res.id_field: new_id,
                dom.enum_field: f"{{{{body.{dom.enum_field}}}}}",
                metric.camel: f"{{{{body.{metric.camel}}}}}",
                "status": status,
            },
            do=[register(ctx.key)],
        ),
    ]
    ctx.book.add(
        "POST", path_t, f"Create {an(res.singular)} (strict schema)", rules, fallback=missing_parent(ctx)
    )
    legacy_id = mint.legacy(res.prefix)
    ctx.book.add(
        "POST",
        loose_t,
        f"DEPRECATED {res.singular} create (v2 schema)",
        [
            rule(
                f"{ctx.key}-loose",
                [p_eq],
                200,
                {"id": legacy_id, "accepted": True, "note": "deprecated v2 schema; not scheduled"},
            )
        ],
        bearer=False,
        deprecated=deprecated(path_t),
        fallback=missing_parent(ctx),
    )
    first_error = _first_error(ctx, broken, metric, required, dom, allowed)
    want = f"{an(kind)} {res.singular} with {words(metric.name)} {amount}"
    if nested:
        want += f" over a {window['value']}-{window['unit'][:-1]} window"
    prompt = opener(rng, dom.team) + pick(
        rng,
        f"Creating {res.plural} under {ctx.parent.value} is failing:\n{quote_request('POST', path, broken)}\n"
        f"came back 422 {quote_json(first_error)}. I want {want}. Fix the request against what the API actually "
        f"accepts and give me the new {res.singular} id and its status.",
        f"The {dom.team} script that books {res.plural} broke after the v3 cut-over. It sends\n"
        f"{quote_request('POST', path, broken)}\nand gets a 422 ({quote_json(first_error)}). Please get {want} "
        f"created on v3 (not the old v2 route) and report the id and status it comes back with.",
        f"Need {want} for {ctx.parent.res.singular} {ctx.parent.value}. My attempt "
        f"{quote_request('POST', path, broken)} is rejected with {quote_json(first_error)}. Repair it; I want the "
        f"created {res.singular} id and status.",
        f"What I'm after for {ctx.parent.value}: {want}. The payload we have,\n"
        f"{quote_request('POST', path, broken)}\nkeeps bouncing with {quote_json(first_error)}. Get it accepted by "
        f"the strict v3 endpoint and report the new id and status.",
    )
    card = [
        CardField(
            res.id_field,
            new_id,
            "string",
            f"Minted only by the strict v3 create (the v2 decoy returns {legacy_id}).",
            f"the new {res.singular} id",
        ),
        CardField("status", status, "string", "Status of the created record.", "its status"),
    ]
    return Draft(
        prompt=prompt,
        goal=f"create {want} under {ctx.parent.value} on the strict v3 route",
        card=card,
        g1=[
            data_flow(
                url_re(path), res.id_field, 201, "The id must come from the strict v3 create.", "created"
            )
        ],
        steps=[Step([execute("POST", path, hdrs(ctx), good)], decoy=[execute("POST", loose, None, broken)])],
        output=Output(new_id, res, ctx.key),
        checkpoints=[
            checkpoint(
                "strict_create",
                url_re(path),
                "POST",
                "A correct run creates on the strict route.",
                status=201,
            )
        ],
        constraints=[
            forbid("no_v2_create", url_re(loose, ""), "The v2 create accepts anything and schedules nothing.")
        ],
    )


def _first_error(
    ctx: Ctx, broken: dict[str, Any], metric: Any, required: list[str], dom: Any, allowed: str
) -> dict:
    """The 422 the broken body really gets (mirrors the rule order above)."""
    if metric.name in broken:
        return {
            "error": "unknown_field",
            "field": metric.name,
            "hint": f"field name drift: this endpoint expects '{metric.camel}' (camelCase), not '{metric.name}'",
        }
    if not all(k in broken for k in required):
        need = f"{', '.join(required)} are required" + (
            " (window is an object {value:int, unit})" if "window" in required else ""
        )
        return {"error": "missing_required", "fields": required, "hint": need}
    return {
        "error": "invalid_enum",
        "field": dom.enum_field,
        "hint": f"{dom.enum_field} '{broken[dom.enum_field]}' is invalid; use one of {allowed}",
    }
