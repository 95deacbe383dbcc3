"""The leaderboard, the model pages and the task pages, built from trial digests.

Size strategy: the leaderboard has a row per model, a model page a row per task (each trial a
small linked chip), a task page a row per trial of that model on that task. No page lists every
trial of the grid, so 44k trials make ~19 pages of ~470 rows, not one page of 44k rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from apiflow.viewer.digest import FAILURE_KINDS, TrialDigest
from apiflow.viewer.html import cells, esc, mark, page, percent, status_badge, table, usd

STATUSES = ("pass", "fail", "unscored", "harness")


@dataclass(frozen=True)
class ModelLine:
    """One leaderboard row: a model's counts over the trials shown."""

    model: str
    trials: int
    scored: int
    passed: int
    g1: int
    g2: int
    abstained: int
    unscored: int
    cost_total: float | None  # None when some trial is unpriced
    cost_mean: float | None


def model_line(model: str, digests: list[TrialDigest]) -> ModelLine:
    """Counts of one model's trials: pass rate is over scored trials (docs/design/050)."""
    scored = [d for d in digests if d.status in ("pass", "fail")]
    costs = [d.cost_usd for d in digests]
    known = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
    return ModelLine(
        model=model,
        trials=len(digests),
        scored=len(scored),
        passed=sum(d.status == "pass" for d in scored),
        g1=sum(d.g1 for d in scored),
        g2=sum(d.g2 for d in scored),
        abstained=sum(d.failure_kind == "abstained" for d in scored),
        unscored=len(digests) - len(scored),
        cost_total=known,
        cost_mean=None if known is None or not digests else known / len(digests),
    )


def leaderboard_page(by_model: dict[str, list[TrialDigest]], *, source: str, price_note: str) -> str:
    """``index.html``: one row per model, best pass rate first."""
    lines = sorted(
        (model_line(m, ds) for m, ds in by_model.items()),
        key=lambda line: (-(line.passed / line.scored if line.scored else -1), line.model),
    )
    rows = []
    for line in lines:
        href = f"{by_model[line.model][0].model_dir}/index.html"
        rows.append(
            "<tr>"
            + cells(
                f'<a href="{esc(href)}">{esc(line.model)}</a>',
                esc(f"{line.trials:,}"),
                esc(percent(line.passed, line.scored)),
                esc(percent(line.g1, line.scored)),
                esc(percent(line.g2, line.scored)),
                esc(f"{line.abstained:,}"),
                esc(f"{line.unscored:,}"),
                esc(usd(line.cost_mean)),
                esc(usd(line.cost_total)),
            )
            + "</tr>"
        )
    total = sum(len(ds) for ds in by_model.values())
    headers = ("model", "trials", "pass rate", "G1 state", "G2 answer", "abstained", "unscored",
               "cost / trial", "cost")  # fmt: skip
    intro = (
        f"<p>{total:,} trials of {len(by_model)} models from <code>{esc(source)}</code>. Rates are over "
        f"scored trials; unscored (no verdict) and harness outcomes are listed, never counted as passes. "
        f"Cost: {esc(price_note)}.</p>"
    )
    return page("apiflow trials", intro + table(headers, rows, attrs=' id="leaderboard"'), depth=0)


def _select(name: str, label: str, options: Iterable[tuple[str, str]]) -> str:
    choices = "".join(f'<option value="{esc(v)}">{esc(text)}</option>' for v, text in options)
    return f'<label>{esc(label)} <select name="{esc(name)}"><option value="">all</option>{choices}</select></label>'


def _filters(target: str, digests: list[TrialDigest], *, per_task: bool) -> str:
    kinds = sorted({d.failure_kind for d in digests}, key=list(FAILURE_KINDS).index)
    selects = [
        _select("status", "verdict", [(s, s) for s in STATUSES if any(d.status == s for d in digests)]),
        _select("failure", "failure kind", [(k, FAILURE_KINDS[k]) for k in kinds]),
    ]
    if per_task:
        worlds = sorted({d.world for d in digests})
        lengths = sorted({d.length for d in digests})
        selects += [
            _select("world", "world", [(w, w) for w in worlds]),
            _select(
                "kind", "task kind", [(k, k) for k in ("solo", "chain") if any(d.kind == k for d in digests)]
            ),
            _select("length", "length", [(str(n), str(n)) for n in lengths]),
        ]
    return (
        f'<form class="filters" data-for="{esc(target)}">{"".join(selects)}</form>'
        f'<p class="count" data-count-for="{esc(target)}"></p>'
    )


def model_page(model: str, digests: list[TrialDigest]) -> str:
    """``m/<model>/index.html``: one row per task, its trials as chips linking to their pages."""
    by_task: dict[str, list[TrialDigest]] = defaultdict(list)
    for d in digests:
        by_task[d.task_id].append(d)
    rows = []
    for task_id in sorted(by_task):
        trials = sorted(by_task[task_id], key=lambda d: (d.trial, d.key))
        first = trials[0]
        chips = "".join(
            f'<a class="chip s-{esc(d.status)}" data-status="{esc(d.status)}" data-failure="{esc(d.failure_kind)}" '
            f'href="{esc(d.page)}" title="{esc(f"trial {d.trial}: {d.status} ({FAILURE_KINDS[d.failure_kind]})")}">'
            f"{esc(d.trial)}</a>"
            for d in trials
        )
        passed = sum(d.status == "pass" for d in trials)
        rows.append(
            f'<tr class="item" data-world="{esc(first.world)}" data-kind="{esc(first.kind)}" '
            f'data-length="{esc(first.length)}">'
            + cells(
                f'<a href="{esc(first.task_page)}">{esc(task_id)}</a>',
                esc(first.world),
                esc(first.kind),
                esc(first.length),
                esc(f"{passed}/{len(trials)}"),
                chips,
            )
            + "</tr>"
        )
    line = model_line(model, digests)
    intro = (
        f"<p>{line.trials:,} trials on {len(by_task)} tasks; pass rate {esc(percent(line.passed, line.scored))} "
        f"of {line.scored:,} scored; cost {esc(usd(line.cost_total))}.</p>"
    )
    headers = ("task", "world", "kind", "length", "passed", "trials")
    body = intro + _filters("tasks", digests, per_task=True) + table(headers, rows, attrs=' id="tasks"')
    crumbs = [("../../index.html", "leaderboard"), ("", model)]
    return page(model, body, depth=2, crumbs=crumbs)


def task_page(model: str, task_id: str, digests: list[TrialDigest], prompt: str) -> str:
    """``m/<model>/task/<task>.html``: the task prompt, the trials, and a predicate-by-trial matrix."""
    trials = sorted(digests, key=lambda d: (d.trial, d.key))
    rows = [
        f'<tr class="item" data-status="{esc(d.status)}" data-failure="{esc(d.failure_kind)}">'
        + cells(
            f'<a href="../{esc(d.page)}">trial {esc(d.trial)}</a>',
            status_badge(d.status),
            esc(FAILURE_KINDS[d.failure_kind]),
            esc(f"{d.predicates_passed}/{d.predicates_total}" if d.predicates_total is not None else "—"),
            f'<span class="reason">{esc(d.failure_reason)}</span>',
            esc(f"{d.tokens_total:,}"),
            esc(usd(d.cost_usd)),
            esc(f"{d.duration_s:,.1f} s"),
        )
        + "</tr>"
        for d in trials
    ]
    headers = (
        "trial",
        "verdict",
        "failure kind",
        "predicates",
        "failure reason",
        "tokens",
        "cost",
        "duration",
    )
    body = (
        f'<details open><summary>task prompt</summary><pre class="text">{esc(prompt)}</pre></details>'
        + "<h2>Trials</h2>"
        + _filters("trials", trials, per_task=False)
        + table(headers, rows, attrs=' id="trials"')
        + _matrix(trials)
    )
    crumbs = [("../../../index.html", "leaderboard"), ("../index.html", model), ("", task_id)]
    return page(f"{model} · {task_id}", body, depth=3, crumbs=crumbs)


def _matrix(trials: list[TrialDigest]) -> str:
    labels: dict[tuple[str, str], None] = {}
    for d in trials:
        for p in d.predicates:
            labels.setdefault((p.group, p.label), None)
    if not labels:
        return ""
    rows = []
    for group, label in labels:
        marks = []
        for d in trials:
            outcome = next((p.passed for p in d.predicates if (p.group, p.label) == (group, label)), None)
            marks.append("" if outcome is None else mark(outcome))
        rows.append("<tr>" + cells(esc(group), f"<code>{esc(label)}</code>", *marks) + "</tr>")
    headers = ("group", "predicate", *(f"t{d.trial}" for d in trials))
    return "<h2>Predicates by trial</h2>" + table(headers, rows, attrs=' class="matrix"')
