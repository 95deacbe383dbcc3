"""One trial's page: outcome and cost, the predicate table, diagnostics, then the conversation.

The predicate table is the grader's own output (``verifier.metadata.predicates``: group, segment,
label, passed, and the detail's reason and explanation), so the page says why a trial failed in
the grader's words; checkpoints, constraints and the LLM judge are shown as the diagnostics they
are (they never change a verdict, REFERENCE §5.3/§5.5).
"""

from __future__ import annotations

from typing import Any

from apiflow.viewer.conversation import Conversation, render_conversation
from apiflow.viewer.digest import FAILURE_KINDS, TrialDigest
from apiflow.viewer.html import cells, esc, mark, page, pretty, status_badge, table, usd

# Detail keys shown in their own column (the rest of the detail is the predicate's specification).
_EXPLAINED = ("reason", "got", "expected", "explain", "prompt_quote")


def render_trial(trial: dict[str, Any], digest: TrialDigest) -> tuple[str, dict[str, str]]:
    """The page of one trial (it lives at ``m/<model>/t/<key>.html``) and the system prompts it links."""
    verifier = trial.get("verifier") or {}
    metadata = verifier.get("metadata") or {}
    sub = metadata.get("sub_predicates") or {}
    conversation: Conversation = render_conversation(list(trial.get("messages") or []), up="../../../")
    body = "".join(
        [
            _outcome(trial, digest),
            _predicates(metadata.get("predicates") or []),
            _segments(sub.get("segment_diagnostics") or {}),
            _diagnostics(sub, metadata.get("llm_verify")),
            '<h2>Conversation <button type="button" data-toggle-all>expand all</button></h2>',
            conversation.html,
        ]
    )
    crumbs = [
        ("../../../index.html", "leaderboard"),
        ("../index.html", digest.model),
        (f"../{digest.task_page}", digest.task_id),
        ("", f"trial {digest.trial}"),
    ]
    title = f"{digest.model} · {digest.task_id} · trial {digest.trial}"
    return page(title, body, depth=3, crumbs=crumbs), conversation.prompts


def _outcome(trial: dict[str, Any], digest: TrialDigest) -> str:
    tokens = trial.get("tokens") or {}
    ours = trial.get("apiflow") or {}
    facts = [
        ("verdict", status_badge(digest.status) + f" <code>{esc(trial.get('verdict'))}</code>"),
        ("failure kind", esc(FAILURE_KINDS.get(digest.failure_kind, digest.failure_kind))),
        ("failure reason", f'<span class="reason">{esc(digest.failure_reason) or "—"}</span>'),
        ("G1 state / G2 answer", f"{mark(digest.g1)} / {mark(digest.g2)}"),
        ("predicates", f"{esc(digest.predicates_passed)} / {esc(digest.predicates_total)}"),
        ("termination", esc(digest.termination or "—")),
        ("cost", esc(usd(digest.cost_usd))),
        ("tokens", esc(" · ".join(f"{k} {v:,}" for k, v in tokens.items() if isinstance(v, int)))),
        ("duration", esc(f"{digest.duration_s:,.1f} s")),
        ("model route", f"<code>{esc(digest.model_api)}</code>"),
        ("trial id", f"<code>{esc(ours.get('trial_id') or digest.key)}</code>"),
    ]
    if ours.get("harness_error"):
        facts.append(("harness error", f"<code>{esc(ours['harness_error'])}</code>"))
    if ours.get("grader"):
        facts.append(("grader rules", f"<code>{esc(ours['grader'])}</code>"))
    rows = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
    return f'<table class="facts">{rows}</table>'


def _predicates(predicates: list[Any]) -> str:
    if not predicates:
        return "<h2>Predicates</h2><p>No grader output (an unscored trial).</p>"
    rows = []
    for p in predicates:
        if not isinstance(p, dict):
            continue
        raw = p.get("detail")
        detail: dict[str, Any] = raw if isinstance(raw, dict) else {}
        explained = "".join(
            f'<div><span class="k">{key}</span> {esc(pretty(detail[key]))}</div>'
            for key in _EXPLAINED
            if key in detail
        )
        spec = {k: v for k, v in detail.items() if k not in _EXPLAINED}
        spec_html = (
            f"<details><summary>spec</summary><pre>{esc(pretty(spec))}</pre></details>" if spec else ""
        )
        css = "pred pass" if p.get("passed") else "pred fail"
        rows.append(
            f'<tr class="{css}">'
            + cells(
                esc(p.get("group")),
                esc(p.get("segment")),
                f"<code>{esc(p.get('label'))}</code>",
                mark(bool(p.get("passed"))),
                explained + spec_html,
            )
            + "</tr>"
        )
    headers = ("group", "segment", "predicate", "passed", "result and explanation")
    return "<h2>Predicates</h2>" + table(headers, rows, attrs=' class="predicates"')


def _segments(diagnostics: dict[str, Any]) -> str:
    per_segment = diagnostics.get("per_segment") or {}
    stages = (
        f"failure stage <b>{_or_dash(diagnostics.get('failure_stage'))}</b> · "
        f"symptom stage <b>{_or_dash(diagnostics.get('symptom_stage'))}</b> · "
        f"tagged segments <b>{_or_dash(diagnostics.get('tagged_segments'))}</b>"
    )
    if not isinstance(per_segment, dict) or not per_segment:
        return f"<h2>Segment diagnostics</h2><p>{stages}; no tagged segments.</p>"
    rows = [
        "<tr>"
        + cells(
            esc(seg),
            esc(f"{v.get('passed')}/{v.get('total')}"),
            esc(v.get("fraction")),
            mark(bool(v.get("g1_passed"))),
            mark(bool(v.get("g2_passed"))),
        )
        + "</tr>"
        for seg, v in sorted(per_segment.items(), key=lambda kv: _segment_order(kv[0]))
        if isinstance(v, dict)
    ]
    headers = ("segment", "passed", "fraction", "G1", "G2")
    return f"<h2>Segment diagnostics</h2><p>{stages}</p>" + table(headers, rows)


def _or_dash(value: Any) -> str:
    return "—" if value is None else esc(value)


def _segment_order(segment: str) -> tuple[int, str]:
    return (int(segment), "") if str(segment).isdigit() else (1 << 30, str(segment))


def _diagnostics(sub: dict[str, Any], llm_verify: Any) -> str:
    checkpoints = [
        "<tr>" + cells(esc(c.get("id")), mark(bool(c.get("hit"))), esc(c.get("applicable")), esc(c.get("explain")))
        + "</tr>"
        for c in sub.get("checkpoints") or () if isinstance(c, dict)
    ]  # fmt: skip
    constraints = [
        "<tr>" + cells(esc(c.get("id")), esc(c.get("kind")), mark(not c.get("violated")),
                       esc(c.get("applicable")), esc(c.get("detail") or c.get("explain")))
        + "</tr>"
        for c in sub.get("constraints") or () if isinstance(c, dict)
    ]  # fmt: skip
    parts = ["<h2>Diagnostics <small>(never change the verdict)</small></h2>"]
    if checkpoints:
        parts.append(table(("checkpoint", "hit", "applicable", "why"), checkpoints))
    if constraints:
        parts.append(table(("constraint", "kind", "kept", "applicable", "detail"), constraints))
    counts = {
        k: sub.get(k) for k in ("tool_call_count", "new_response_count", "new_variable_count") if k in sub
    }
    if counts:
        text = ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in counts.items())
        parts.append(f"<p>{esc(text)}</p>")
    if llm_verify:
        parts.append(f"<details><summary>LLM judge</summary><pre>{esc(pretty(llm_verify))}</pre></details>")
    return "".join(parts) if len(parts) > 1 else ""
