"""Multistep execution: draft -> (validate) -> commit that fails part-way (503) -> confirm retry."""

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
    missing,
    missing_parent,
    url_re,
)
from apiflow.authoring.generate.routes import absent, any_, eq, register, rule
from apiflow.authoring.generate.wording import an, opener, pick, quote_json, quote_request, words


@dataclass(frozen=True, slots=True)
class _Plan:
    """Names and values of one multistep subtask."""

    res: Resource
    param: str
    create_t: str
    create: str
    new_id: str
    ref: str
    items: int
    done: str
    validate: bool
    key: str

    @property
    def legacy_t(self) -> str:
        return self.create_t.replace("/v3/", "/v1/", 1)

    @property
    def legacy(self) -> str:
        return self.create.replace("/v3/", "/v1/", 1)

    @property
    def one_t(self) -> str:
        return f"/v3/{self.res.plural}/{{{self.res.id_field}}}"

    @property
    def one(self) -> str:
        return f"/v3/{self.res.plural}/{self.new_id}"

    @property
    def ref_key(self) -> str:
        return f"{self.done}_ref"

    @property
    def s(self) -> str:
        return f"state.{self.key}"

    @property
    def mine(self) -> dict[str, Any]:
        return eq(f"path.{self.res.id_field}", self.new_id)

    def partial_error(self) -> dict[str, Any]:
        """What the first commit answers: a 503 after all but one item."""
        return {
            "error": "commit_interrupted",
            "committed_count": self.items - 1,
            "item_count": self.items,
            "hint": f"{self.items - 1} of {self.items} items committed; GET {self.one} then re-POST this commit "
            'with {"confirm": true} to finish idempotently',
        }


def _plan(ctx: Ctx) -> _Plan:
    res = ctx.child()
    tbase, base, p = entry(ctx)
    new_id, ref = ctx.mint.id(res.prefix), ctx.mint.ref(f"{res.prefix}c")
    items = ctx.rng.randint(3, 7)
    done = ctx.rng.choice(ctx.dom.done_words)
    return _Plan(res, p, f"{tbase}/{res.plural}", f"{base}/{res.plural}", new_id, ref, items, done,
                 ctx.difficulty != "easy", ctx.key)


def _create_routes(ctx: Ctx, m: _Plan) -> str:
    """The v3 draft create and its v1 decoy; returns the decoy's id."""
    k, on_parent = m.key, [eq(f"path.{m.param}", ctx.parent.value)]
    draft_body = {m.res.id_field: m.new_id, "status": "draft", "item_count": m.items, "committed_count": 0}
    ctx.book.add("POST", m.create_t, f"Create a draft {m.res.singular}", gate_rules(ctx, m.param) + [
        rule(f"{k}-create", on_parent, 201, draft_body,
             do=[{"set": f"{k}.status", "value": "draft"}, {"set": f"{k}.committed", "value": 0}]),
    ], fallback=missing_parent(ctx))
    legacy_id = ctx.mint.legacy(m.res.prefix)
    legacy_body = {m.res.camel_id: legacy_id, "status": "draft", "note": "DEPRECATED v1 schema; cannot be committed"}
    ctx.book.add("POST", m.legacy_t, f"DEPRECATED draft {m.res.singular} create",
                 [rule(f"{k}-legacy", on_parent, 201, legacy_body)],
                 bearer=False, deprecated=deprecated(m.create_t), fallback=missing_parent(ctx))
    return legacy_id


def _unknown(m: _Plan) -> dict[str, Any]:
    return rule(f"{m.key}-unknown", [m.mine, absent(f"{m.s}.status")], 404, {
        "error": f"{m.res.singular.replace('-', '_')}_not_found",
        "hint": f"use the {m.res.id_field} minted by POST {m.create_t}"})


def _record_routes(ctx: Ctx, m: _Plan) -> None:
    """Read, (validate,) commit and — when hard — the never-settling confirm lure."""
    k, s, res = m.key, m.s, m.res
    counted = {"$str": f"{{{{{s}.committed}}}}"}
    ctx.book.add("GET", m.one_t, f"Read {an(res.singular)}", [_unknown(m), rule(f"{k}-read", [m.mine], 200, {
        res.id_field: m.new_id, "status": f"{{{{{s}.status}}}}", "item_count": m.items,
        "committed_count": counted})], fallback=missing(res))
    commit_rules = [_unknown(m)]
    if m.validate:
        commit_rules.append(rule(f"{k}-unvalidated", [m.mine, absent(f"{s}.validated")], 409,
                                 {"error": "not_validated", "hint": f"POST {m.one}/validate before committing"}))
        ctx.book.add("POST", f"{m.one_t}/validate", f"Validate a draft {res.singular}", [
            _unknown(m), rule(f"{k}-validate", [m.mine], 200,
                              {res.id_field: m.new_id, "valid": True, "item_count": m.items},
                              do=[{"set": f"{k}.validated", "value": True}])], fallback=missing(res))
    finished = {res.id_field: m.new_id, "status": m.done, "committed_count": m.items, "item_count": m.items,
                m.ref_key: m.ref}
    finish = any_(eq(f"{s}.committed", m.items),
                  {"all": [eq("body.confirm", True), {"at": f"{s}.committed", "gte": 1}]})
    commit_rules += [
        rule(f"{k}-done", [m.mine, finish], 200, finished,
             do=[{"set": f"{k}.committed", "value": m.items}, {"set": f"{k}.status", "value": m.done},
                 register(k)]),
        rule(f"{k}-partial", [m.mine], 503, m.partial_error(), do=[{"set": f"{k}.committed", "value": m.items - 1}]),
    ]
    ctx.book.add("POST", f"{m.one_t}/commit", f"Commit {an(res.singular)}", commit_rules, fallback=missing(res))
    if ctx.hard:
        ctx.book.add("GET", f"{m.one_t}/confirm", f"Confirm state of {an(res.singular)} (eventually consistent)", [
            _unknown(m), rule(f"{k}-confirm", [m.mine], 200, {
                res.id_field: m.new_id, "status": "checking", "committed_count": counted,
                "hint": f"status becomes {m.done} only after reconciliation; read the commit response"})],
            fallback=missing(res))


def _steps(ctx: Ctx, m: _Plan) -> list[Step]:
    h, own, commit = hdrs(ctx), ctx.auth(), f"{m.one}/commit"
    steps = [Step([execute("POST", m.create, h, {})], decoy=[execute("POST", m.legacy, None, {})])]
    if m.validate:
        steps.append(Step([execute("POST", f"{m.one}/validate", own)]))
    return steps + [
        Step([execute("POST", commit, own, {})], essential=False),
        Step([execute("GET", m.one, own)], essential=False),
        Step([execute("POST", commit, own, {"confirm": True})]),
    ]


def _card(m: _Plan, legacy_id: str) -> list[CardField]:
    return [
        CardField(m.res.id_field, m.new_id, "string", f"The v3 draft (the v1 decoy mints {legacy_id}).",
                  f"the {m.res.singular} id"),
        CardField("status", m.done, "string", "The finished commit's status.", "final status"),
        CardField("committed_count", m.items, "numeric", "All items are committed after the confirm retry.",
                  "how many items are committed"),
        CardField(m.ref_key, m.ref, "string", "A canary only the finished commit response carries.",
                  words(m.ref_key)),
    ]


def _prompt(ctx: Ctx, m: _Plan) -> str:
    res, pid, ref_words = m.res, ctx.parent.value, words(m.ref_key)
    flow = "create the draft" + (", validate it" if m.validate else "") + " and commit it"
    partial = quote_json(m.partial_error()).replace(m.new_id, "<id>")
    broken = quote_request("POST", f"/v3/{res.plural}/<id>/commit", {"commit": "yes"})
    return opener(ctx.rng, ctx.dom.team) + pick(
        ctx.rng,
        f"I need {an(res.singular)} for {pid} taken all the way through: {flow}. Last time the commit answered "
        f"503 {partial} (that run was on a different draft) and the record was left half-done. Get it fully "
        f"committed and tell me the id, final status, committed count and the {ref_words}.",
        f"Our pipeline that pushes {res.plural} for {ctx.parent.res.singular} {pid} dies at the commit:\n{broken}\n"
        f"comes back 503 with a partial write. Please {flow} on v3, finish the commit cleanly, and report the id, "
        f"status, committed count and {ref_words}.",
        f"Please {flow} for {pid} on the v3 API (the v1 draft route is dead). Heads up: commits on this service "
        f"are known to fail part-way with 503 commit_interrupted. I want the {res.singular} id, its final status, "
        f"how many items got committed and the {ref_words}.",
        f"Release checklist item for {pid}: {flow} on v3. The commit step is flaky (it can stop part-way with a "
        f"503), so make sure it really finishes. Report the {res.singular} id, the final status, the committed "
        f"count and the {ref_words}.",
    )


def draft(ctx: Ctx) -> Draft:
    """Draft a multistep subtask whose commit is interrupted and must be finished idempotently."""
    m = _plan(ctx)
    legacy_id = _create_routes(ctx, m)
    _record_routes(ctx, m)
    commit = f"{m.one}/commit"
    return Draft(
        prompt=_prompt(ctx, m),
        goal=f"create a draft {m.res.singular} for {ctx.parent.value}" + (", validate it" if m.validate else "")
        + " and drive its interrupted commit to the end",
        card=_card(m, legacy_id),
        g1=[data_flow(url_re(m.create), m.res.id_field, 201, "The draft must be created on v3.", "create the draft"),
            data_flow(url_re(commit), m.ref_key, 200, "The ref comes from the finished commit.", "fully committed")],
        steps=_steps(ctx, m),
        output=Output(m.new_id, m.res, ctx.key),
        checkpoints=[checkpoint("confirm_retry", url_re(commit), "POST", "A correct run re-POSTs with confirm:true.",
                                body_contains={"confirm": True})],
        constraints=[forbid("no_v1_draft", url_re(m.legacy, ""), "The v1 draft route mints an uncommittable decoy.")],
    )
