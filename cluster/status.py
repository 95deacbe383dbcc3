"""``grid status OUT``: done / remaining / unscored by model, both pass rates, and spend, read from the store alone."""

from __future__ import annotations

import collections
from typing import Any

from apiflow.analysis.adaptive_section import latest_record
from apiflow.analysis.outcomes import kind_of
from apiflow.errors import UsageError
from apiflow.results.batch_journal import BatchJournal
from apiflow.results.quarantine import PREFIX as QUARANTINE
from apiflow.results.store import ResultStore
from cluster.budget import spend_on_record
from cluster.plan import PlannedTrial, attempts_toward_bound, failed_attempts, final_ids, plan_grid
from cluster.report import sweep_lines
from cluster.spec import GridSpec
from cluster.worker import load_checked_bank


def _spend_line(store: ResultStore, spec: GridSpec) -> str:
    """The grid's spend as its budget ledger counts it: stored rows, every failed attempt, and what the
    latest driver checkpoint saw spent by trials that stored nothing."""
    spend = spend_on_record(store)
    cap = f" of the ${spec.budget_usd:.2f} cap ({spend.total_usd / spec.budget_usd:.1%})" if spec.budget_usd else ""
    return (
        f"  spend on record ${spend.total_usd:.4f}{cap}: stored trials ${spend.rows_usd:.4f}, failed attempts "
        f"${spend.failures_usd:.4f}, unstored at the last checkpoint ${spend.unstored_usd:.4f}"
    )


def grid_status(out: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """Lines describing the grid stored at ``out``.

    The plan is rebuilt from the manifest's grid spec (so "remaining" is exact); when the bank
    is not reachable from here, the manifest's planned count is used instead.
    """
    store = ResultStore(out, storage_options)
    manifest = store.read_manifest()
    if manifest is None:
        raise UsageError(f"{out} holds no grid (no manifest.json)")
    spec = GridSpec.model_validate(manifest["grid"])
    rows = store.read_rows()
    done = set(rows.column("trial_id").to_pylist())
    attempts = failed_attempts(store, done)
    try:
        plan = plan_grid(spec, load_checked_bank(spec))
    except UsageError:
        plan = None
    model_of = {r["trial_id"]: r["model"] for r in attempts}
    if plan is not None:  # attempts of trials the plan does not hold are not the grid's
        model_of = {t.trial_id: spec.models[t.model_index].slug for t in plan if t.trial_id in model_of}
    bound = spec.max_unscored_attempts
    final = final_ids(attempts_toward_bound(attempts), bound) & model_of.keys()
    failed = model_of.keys() - final
    lines = [
        f"grid {spec.name} ({manifest['grid_id'][:12]}) at {out}",
        f"  bank {manifest['bank']['name']} {manifest['bank']['hash'][:12]}; prices {manifest['price_table']['version']}"
        f" {manifest['price_table']['hash'][:12]}; git {str(manifest['git'].get('commit'))[:10]}"
        f"{' (dirty)' if manifest['git'].get('dirty') else ''}",
    ]
    planned_total = len(plan) if plan is not None else manifest["planned_trials"]
    sweep = latest_record(store)  # an adaptive grid: its latest sweep's question, counts and stop
    lines.append(
        f"  done {len(done)} / {planned_total}; remaining {planned_total - len(done) - len(final)}"
        + (" of the whole plan (the sweep runs what its question needs)" if sweep else "")
        + f"; failed (harness/provider, will retry) {len(failed)}; unscored, final {len(final)}"
        + (f" (after {bound} unscored attempts; grid run --retry-unscored runs them again)" if final else "")
    )
    lines += sweep_lines(sweep, "in its latest run") if sweep is not None else []
    lines.append(_spend_line(store, spec))
    lines += _batch_lines(store) if any(m.tier == "batch" for m in spec.models) else []
    aside = store.objects.list(QUARANTINE, "")
    if aside:
        lines.append(f"  set aside as damaged under {QUARANTINE}/: {len(aside)} objects (their trials re-run on resume)")
    causes = collections.Counter(kind_of(r["harness_error"]) for r in attempts)
    if causes:
        lines.append("  unscored attempts by cause: " + ", ".join(f"{k} {n}" for k, n in causes.most_common()))
    lines += _model_table(spec, plan, rows, done, model_of, final)
    return lines


def _batch_lines(store: ResultStore) -> list[str]:
    """The batch tier's journal (docs/design/048): batches still at the provider are what a rerun
    re-attaches to (a driver killed meanwhile loses none of them)."""
    entries = BatchJournal(store.objects).entries()
    if not entries:
        return []
    running = [e for e in entries.values() if not e.collected]
    unconfirmed = sum(e.batch_id is None for e in running)
    turns = sum(len(e.custom_ids) for e in running)
    line = f"  batch tier: {len(entries)} batches on record, {len(entries) - len(running)} collected"
    if running:
        line += (f"; {len(running)} ({turns} turns) not collected yet: a rerun re-attaches to them"
                 + (f" ({unconfirmed} without a recorded id: looked for at the provider first)" if unconfirmed else ""))  # fmt: skip
    return [line]


def _model_table(
    spec: GridSpec, plan: list[PlannedTrial] | None, rows: Any, done: set[str], model_of: dict[str, str],
    final: set[str],
) -> list[str]:  # fmt: skip
    """Per model: planned, done, remaining, unscored (will retry, final), and both pass rates — on the
    stored (scored) trials, and with every unscored trial as a failure (as ``apiflow report
    --count-unscored``), so a model cannot look better by failing unscored."""
    by_model: dict[str, dict[str, int]] = {
        m.slug: {"planned": 0, "done": 0, "failed": 0, "final": 0, "passed": 0} for m in spec.models
    }
    for trial in plan or ():
        slug = spec.models[trial.model_index].slug
        by_model[slug]["planned"] += 1
        by_model[slug]["done"] += trial.trial_id in done
    for trial_id, slug in model_of.items():
        if slug in by_model:
            by_model[slug]["final" if trial_id in final else "failed"] += 1
    stored = collections.Counter(rows.column("model").to_pylist())
    for row in rows.select(["model", "passed"]).to_pylist():
        if row["model"] in by_model:
            by_model[row["model"]]["passed"] += bool(row["passed"])
    width = max(len(s) for s in by_model)
    lines = [f"  {'model':<{width}}  planned   done  remaining  failed  final   pass  pass (unscored = fail)"]
    for slug, c in by_model.items():
        scored = c["done"] if plan is not None else stored[slug]
        rate = f"{c['passed'] / scored:.1%}" if scored else "-"
        counted = scored + c["failed"] + c["final"]
        strict = f"{c['passed'] / counted:.1%}" if counted else "-"
        planned = c["planned"] if plan is not None else "?"
        left = c["planned"] - c["done"] - c["final"] if plan is not None else "?"
        lines.append(
            f"  {slug:<{width}}  {planned:>7}  {scored:>5}  {left:>9}  {c['failed']:>6}  {c['final']:>5}  "
            f"{rate:>6}  {strict:>21}"
        )
    return lines
