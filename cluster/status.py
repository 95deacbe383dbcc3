"""``grid status OUT``: done / remaining / failed by model, and spend, read from the store alone."""

from __future__ import annotations

import collections
from typing import Any

from apiflow.analysis.outcomes import kind_of
from apiflow.errors import UsageError
from apiflow.results.quarantine import PREFIX as QUARANTINE
from apiflow.results.store import ResultStore
from cluster.budget import spend_on_record
from cluster.plan import plan_grid
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


def _failed_attempts(store: ResultStore, done: set[str]) -> list[dict[str, Any]]:
    """Every failed attempt of a trial still not stored (``trial_id``, ``harness_error``), read once."""
    failures = store.read_rows(failures=True)
    if not failures.num_rows:
        return []
    return [r for r in failures.select(["trial_id", "harness_error"]).to_pylist() if r["trial_id"] not in done]


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
    attempts = _failed_attempts(store, done)
    failed = {r["trial_id"] for r in attempts}
    try:
        plan = plan_grid(spec, load_checked_bank(spec))
    except UsageError:
        plan = None
    lines = [
        f"grid {spec.name} ({manifest['grid_id'][:12]}) at {out}",
        f"  bank {manifest['bank']['name']} {manifest['bank']['hash'][:12]}; prices {manifest['price_table']['version']}"
        f" {manifest['price_table']['hash'][:12]}; git {str(manifest['git'].get('commit'))[:10]}"
        f"{' (dirty)' if manifest['git'].get('dirty') else ''}",
    ]
    planned_total = len(plan) if plan is not None else manifest["planned_trials"]
    lines.append(
        f"  done {len(done)} / {planned_total}; remaining {planned_total - len(done)}; "
        f"failed (harness/provider, will retry) {len(failed)}"
    )
    lines.append(_spend_line(store, spec))
    aside = store.objects.list(QUARANTINE, "")
    if aside:
        lines.append(f"  set aside as damaged under {QUARANTINE}/: {len(aside)} objects (their trials re-run on resume)")
    causes = collections.Counter(kind_of(r["harness_error"]) for r in attempts)
    if causes:
        lines.append("  unscored attempts by cause: " + ", ".join(f"{k} {n}" for k, n in causes.most_common()))
    by_model: dict[str, dict[str, int]] = {
        m.slug: {"planned": 0, "done": 0, "failed": 0, "passed": 0} for m in spec.models
    }
    if plan is not None:
        for trial in plan:
            slug = spec.models[trial.model_index].slug
            by_model[slug]["planned"] += 1
            by_model[slug]["done"] += trial.trial_id in done
            by_model[slug]["failed"] += trial.trial_id in failed
    for row in rows.select(["model", "passed"]).to_pylist():
        if row["model"] in by_model:
            by_model[row["model"]]["passed"] += bool(row["passed"])
    width = max(len(s) for s in by_model)
    lines.append(f"  {'model':<{width}}  planned   done  remaining  failed  pass rate")
    for slug, c in by_model.items():
        rate = f"{c['passed'] / c['done']:.1%}" if c["done"] else "-"
        planned = c["planned"] if plan is not None else "?"
        left = c["planned"] - c["done"] if plan is not None else "?"
        lines.append(
            f"  {slug:<{width}}  {planned:>7}  {c['done']:>5}  {left:>9}  {c['failed']:>6}  {rate:>9}"
        )
    return lines
