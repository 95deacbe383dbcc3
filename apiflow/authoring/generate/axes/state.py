"""Statefulness: a seeded revision has gone stale; read the live one, write with it, keep the receipt."""

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
    entry,
    execute,
    forbid,
    gate_rules,
    hdrs,
    missing_parent,
    url_re,
    workspace_value,
    write_var,
)
from apiflow.authoring.generate.routes import absent, eq, not_, register, rule
from apiflow.authoring.generate.wording import an, opener, pick, quote_json


@dataclass(frozen=True, slots=True)
class _Plan:
    """Names and values of one statefulness subtask."""

    res: Resource
    param: str
    tbase: str
    base: str
    live_rev: str
    stale_rev: str
    new_id: str
    receipt: str
    word: str
    keep: bool

    @property
    def status(self) -> str:
        return f"{self.base}/revision"

    @property
    def cache(self) -> str:
        return f"{self.base}/revision-cache"

    @property
    def post(self) -> str:
        return f"{self.base}/{self.res.plural}"

    @property
    def var(self) -> str:
        return f"{self.res.singular.replace('-', '_')}_receipt"

    def stale_error(self) -> dict[str, str]:
        return {"error": "stale_revision", "hint": f"revision does not match; GET {self.status} for the current revision"}


def _plan(ctx: Ctx) -> _Plan:
    mint, res = ctx.mint, ctx.child()
    tbase, base, p = entry(ctx)
    live_rev, stale_rev = mint.ref("rev"), mint.legacy("rev")
    new_id, receipt = mint.id(res.prefix), mint.ref(f"{res.prefix}k")
    word = ctx.rng.choice(ctx.dom.flag_words)
    return _Plan(res, p, tbase, base, live_rev, stale_rev, new_id, receipt, word, ctx.difficulty != "easy")


def _routes(ctx: Ctx, m: _Plan) -> None:
    """Live revision (leases it), the lagging cache, and the write guarded by revision + lease."""
    k, on, parent = ctx.key, eq(f"path.{m.param}", ctx.parent.value), ctx.parent
    live = {parent.res.id_field: parent.value, "revision": m.live_rev, "condition": m.word, "updated_by": ctx.dom.team}
    ctx.book.add("GET", f"{m.tbase}/revision", f"Current revision of {an(parent.res.singular)}",
                 gate_rules(ctx, m.param) + [rule(f"{k}-rev", [on], 200, live,
                                                  do=[{"set": f"{k}.leased", "value": True}])],
                 fallback=missing_parent(ctx))
    cached = {parent.res.id_field: parent.value, "revision": m.stale_rev, "note": "cached; may lag the live revision"}
    ctx.book.add("GET", f"{m.tbase}/revision-cache", "Revision cache (refreshed hourly, not authoritative)",
                 [rule(f"{k}-cache", [on], 200, cached)], fallback=missing_parent(ctx))
    stale = {"any": [not_(eq("body.revision", m.live_rev)), absent(f"state.{k}.leased")]}
    ctx.book.add("POST", f"{m.tbase}/{m.res.plural}", f"Record {an(m.res.singular)} against the current revision",
                 gate_rules(ctx, m.param) + [
                     rule(f"{k}-no-rev", [on, absent("body.revision")], 428, {
                         "error": "precondition_required", "hint": "send the current revision in body field 'revision'"}),
                     rule(f"{k}-stale", [on, stale], 409, m.stale_error()),
                     rule(f"{k}-ok", [on], 201, {m.res.id_field: m.new_id, "receipt": m.receipt, "revision": m.live_rev},
                          do=[register(k)]),
                 ], fallback=missing_parent(ctx))


def _checks(ctx: Ctx, m: _Plan) -> tuple[list[Step], list[dict[str, Any]]]:
    h = hdrs(ctx)
    steps = [
        Step([execute("POST", m.post, h, {"revision": m.stale_rev})], essential=False),
        Step([execute("GET", m.status, h)], decoy=[execute("GET", m.cache, h)]),
        Step([execute("POST", m.post, h, {"revision": m.live_rev})]),
    ]
    g1 = [data_flow(url_re(m.status), "revision", 200, "The revision written with must be the live one.",
                    "current revision", used_in=url_re(m.post, "")),
          data_flow(url_re(m.post), "receipt", 201, "The receipt only a write against the live revision returns.",
                    "receipt", stored=m.keep)]
    if m.keep:
        steps.append(Step([write_var(m.var, m.receipt)]))
        g1.append(workspace_value(m.receipt, "The receipt must be saved for the next shift.", f"save it as {m.var}"))
    return steps, g1


def _prompt(ctx: Ctx, m: _Plan) -> str:
    res, pid, error = m.res, ctx.parent.value, quote_json(m.stale_error())
    ask = f" and save the receipt in a local variable called {m.var}" if m.keep else ""
    return opener(ctx.rng, ctx.dom.team) + pick(
        ctx.rng,
        f"Recording {an(res.singular)} on {pid} with the revision from my notes "
        f"({ctx.parent.res.singular.replace('-', '_')}_revision in local vars) now fails with 409 {error}. Someone "
        f"changed it in the meantime. Record it against the current revision{ask}, and give me the {res.singular} "
        f"id and the receipt.",
        f"The {ctx.dom.team} says {pid} changed since yesterday, and my write bounced with {error}. The revision "
        f"cache endpoint is not to be trusted. Record the {res.singular} against the live revision{ask}; report "
        f"the {res.singular} id and receipt.",
        f"My saved revision for {pid} is stale (the write answered 409 stale_revision). Get the real current "
        f"revision, record the {res.singular}{ask}, and send me the new id and receipt.",
        f"Write conflict on {pid}: {error}. Use the live revision (the revision cache lags), record the "
        f"{res.singular}{ask}, and report the id and receipt.",
    )


def draft(ctx: Ctx) -> Draft:
    """Draft a statefulness subtask: optimistic concurrency against a stale seeded revision."""
    m = _plan(ctx)
    _routes(ctx, m)
    steps, g1 = _checks(ctx, m)
    card = [CardField(m.res.id_field, m.new_id, "string", "Minted by the write against the live revision.",
                      f"the {m.res.singular} id"),
            CardField("receipt", m.receipt, "string", "A canary only the accepted write returns.", "the receipt")]
    return Draft(
        prompt=_prompt(ctx, m),
        goal=f"record {an(m.res.singular)} on {ctx.parent.value} against its live revision"
        + (f", keeping the receipt as {m.var}" if m.keep else ""),
        card=card, g1=g1, steps=steps, output=Output(m.new_id, m.res, ctx.key),
        seed_locals={f"{ctx.parent.res.singular.replace('-', '_')}_revision": m.stale_rev}, stale=m.stale_rev,
        checkpoints=[checkpoint("read_live_revision", url_re(m.status), "GET", "A correct run reads the live revision.")],
        constraints=[forbid("no_revision_cache", url_re(m.cache, ""), "The cache lags the live revision.")],
    )
