"""Multistep execution: draft -> (validate) -> commit that fails part-way (503) -> confirm retry."""

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
    url_re,
)
from apiflow.bank.generate.routes import absent, any_, eq, register, rule
from apiflow.bank.generate.wording import an, opener, pick, quote_json, quote_request, words


def draft(ctx: Ctx) -> Draft:
    """Draft a multistep subtask whose commit is interrupted and must be finished idempotently."""
    dom, rng, mint = ctx.dom, ctx.rng, ctx.mint
    res = ctx.child()
    tbase, base, p = entry(ctx)
    create_t, create = f"{tbase}/{res.plural}", f"{base}/{res.plural}"
    legacy_t, legacy = create_t.replace("/v3/", "/v1/", 1), create.replace("/v3/", "/v1/", 1)
    new_id, ref = mint.id(res.prefix), mint.ref(f"{res.prefix}c")
    items = rng.randint(3, 7)
    done = rng.choice(dom.done_words)
    ref_key = f"{done}_ref"
    validate = ctx.difficulty != "easy"
    one_t, one = f"/v3/{res.plural}/{{{res.id_field}}}", f"/v3/{res.plural}/{new_id}"
    k, s = ctx.key, f"state.{ctx.key}"
    mine = eq(f"path.{res.id_field}", new_id)
    ctx.book.add(
        "POST",
        create_t,
        f"Create a draft {res.singular}",
        gate_rules(ctx, p)
        + [
            rule(
                f"{k}-create",
                [eq(f"path.{p}", ctx.parent.value)],
                201,
                {res.id_field: new_id, "status": "draft", "item_count": items, "committed_count": 0},
                do=[{"set": f"{k}.status", "value": "draft"}, {"set": f"{k}.committed", "value": 0}],
            ),
        ],
        fallback=missing_parent(ctx),
    )
    legacy_id = mint.legacy(res.prefix)
    ctx.book.add(
        "POST",
        legacy_t,
        f"DEPRECATED draft {res.singular} create",
        [
            rule(
                f"{k}-legacy",
                [eq(f"path.{p}", ctx.parent.value)],
                201,
                {
                    res.camel_id: legacy_id,
                    "status": "draft",
                    "note": "DEPRECATED v1 schema; cannot be committed",
                },
            ),
        ],
        bearer=False,
        deprecated=deprecated(create_t),
        fallback=missing_parent(ctx),
    )
    unknown = rule(
        f"{k}-unknown",
        [mine, absent(f"{s}.status")],
        404,
        {
            "error": f"{res.singular.replace('-', '_')}_not_found",
            "hint": f"use the {res.id_field} minted by POST {create_t}",
        },
    )
    ctx.book.add(
        "GET",
        one_t,
        f"Read {an(res.singular)}",
        [
            unknown,
            rule(
                f"{k}-read",
                [mine],
                200,
                {
                    res.id_field: new_id,
                    "status": f"{{{{{s}.status}}}}",
                    "item_count": items,
                    "committed_count": {"$str": f"{{{{{s}.committed}}}}"},
                },
            ),
        ],
        fallback=missing(res),
    )
    commit_t, commit = f"{one_t}/commit", f"{one}/commit"
    commit_rules = [unknown]
    if validate:
        commit_rules.append(
            rule(
                f"{k}-unvalidated",
                [mine, absent(f"{s}.validated")],
                409,
                {"error": "not_validated", "hint": f"POST {one}/validate before committing"},
            )
        )
        ctx.book.add(
            "POST",
            f"{one_t}/validate",
            f"Validate a draft {res.singular}",
            [
                unknown,
                rule(
                    f"{k}-validate",
                    [mine],
                    200,
                    {res.id_field: new_id, "valid": True, "item_count": items},
                    do=[{"set": f"{k}.validated", "value": True}],
                ),
            ],
            fallback=missing(res),
        )
    finished = {
        res.id_field: new_id,
        "status": done,
        "committed_count": items,
        "item_count": items,
        ref_key: ref,
    }
    partial_error = {
        "error": "commit_interrupted",
        "committed_count": items - 1,
        "item_count": items,
        "hint": f"{items - 1} of {items} items committed; GET {one} then re-POST this commit with "
        '{"confirm": true} to finish idempotently',
    }
    commit_rules += [
        rule(
            f"{k}-done",
            [
                mine,
                any_(
                    eq(f"{s}.committed", items),
                    {"all": [eq("body.confirm", True), {"at": f"{s}.committed", "gte": 1}]},
                ),
            ],
            200,
            finished,
            do=[
                {"set": f"{k}.committed", "value": items},
                {"set": f"{k}.status", "value": done},
                register(k),
            ],
        ),
        rule(f"{k}-partial", [mine], 503, partial_error, do=[{"set": f"{k}.committed", "value": items - 1}]),
    ]
    ctx.book.add("POST", commit_t, f"Commit {an(res.singular)}", commit_rules, fallback=missing(res))
    if ctx.hard:
        ctx.book.add(
            "GET",
            f"{one_t}/confirm",
            f"Confirm state of {an(res.singular)} (eventually consistent)",
            [
                unknown,
                rule(
                    f"{k}-confirm",
                    [mine],
                    200,
                    {
                        res.id_field: new_id,
                        "status": "checking",
                        "committed_count": {"$str": f"{{{{{s}.committed}}}}"},
                        "hint": f"status becomes {done} only after reconciliation; read the commit response",
                    },
                ),
            ],
            fallback=missing(res),
        )
    h, own = hdrs(ctx), ctx.auth()
    steps = [Step([execute("POST", create, h, {})], decoy=[execute("POST", legacy, None, {})])]
    if validate:
        steps.append(Step([execute("POST", f"{one}/validate", own)]))
    steps += [
        Step([execute("POST", commit, own, {})], essential=False),
        Step([execute("GET", one, own)], essential=False),
        Step([execute("POST", commit, own, {"confirm": True})]),
    ]
    card = [
        CardField(
            res.id_field,
            new_id,
            "string",
            f"The v3 draft (the v1 decoy mints {legacy_id}).",
            f"the {res.singular} id",
        ),
        CardField("status", done, "string", "The finished commit's status.", "final status"),
        CardField(
            "committed_count",
            items,
            "numeric",
            "All items are committed after the confirm retry.",
            "how many items are committed",
        ),
        CardField(
            ref_key, ref, "string", "A canary only the finished commit response carries.", words(ref_key)
        ),
    ]
    flow = "create the draft" + (", validate it" if validate else "") + " and commit it"
    prompt = opener(rng, dom.team) + pick(
        rng,
        f"I need {an(res.singular)} for {ctx.parent.value} taken all the way through: {flow}. Last time the commit "
        f"answered 503 {quote_json(partial_error).replace(new_id, '<id>')} (that run was on a different draft) and the record was left "
        f"half-done. Get it fully committed and tell me the id, final status, committed count and the {words(ref_key)}.",
        f"Our pipeline that pushes {res.plural} for {ctx.parent.res.singular} {ctx.parent.value} dies at the commit:\n"
        f"{quote_request('POST', f'/v3/{res.plural}/<id>/commit', {'commit': 'yes'})}\ncomes back 503 with a partial write. "
        f"Please {flow} on v3, finish the commit cleanly, and report the id, status, committed count and {words(ref_key)}.",
        f"Please {flow} for {ctx.parent.value} on the v3 API (the v1 draft route is dead). Heads up: commits on "
        f"this service are known to fail part-way with 503 commit_interrupted. I want the {res.singular} id, its "
        f"final status, how many items got committed and the {words(ref_key)}.",
        f"Release checklist item for {ctx.parent.value}: {flow} on v3. The commit step is flaky (it can stop "
        f"part-way with a 503), so make sure it really finishes. Report the {res.singular} id, the final status, the "
        f"committed count and the {words(ref_key)}.",
    )
    return Draft(
        prompt=prompt,
        goal=f"create a draft {res.singular} for {ctx.parent.value}"
        + (", validate it" if validate else "")
        + " and drive its interrupted commit to the end",
        card=card,
        g1=[
            data_flow(
                url_re(create), res.id_field, 201, "The draft must be created on v3.", "create the draft"
            ),
            data_flow(
                url_re(commit), ref_key, 200, "The ref comes from the finished commit.", "fully committed"
            ),
        ],
        steps=steps,
        output=Output(new_id, res, ctx.key),
        checkpoints=[
            checkpoint(
                "confirm_retry",
                url_re(commit),
                "POST",
                "A correct run re-POSTs with confirm:true.",
                body_contains={"confirm": True},
            )
        ],
        constraints=[
            forbid("no_v1_draft", url_re(legacy, ""), "The v1 draft route mints an uncommittable decoy.")
        ],
    )
