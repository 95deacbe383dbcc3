"""``grid verify RESULTS``: is what the store holds the grid it claims, row by row and transcript by transcript?

A grid's promise is that an object in the store *is* the record of a finished trial. Writes that were
acknowledged can still be lost later (a lifecycle rule, a replication gap, a hand ``rm``), objects can
be damaged, and two writers can store one trial twice. So the check reads the store as every reader
does (each object's checksum checked, a damaged one set aside: ``apiflow.results.reading``) and holds
it against the plan rebuilt from the manifest: planned trials without a row, rows of no planned
trial, stored trials without a transcript, trial ids in more than one row object. One line a kind.
A planned trial without a row that ended unscored ``max_unscored_attempts`` times is accounted for
(unscored, final: its failure rows are its record), not missing. An adaptive grid (051) is held
against what its sweep ran, each model's recorded prefix of the unit order: the units it never
needed are not missing, and rows of them (a wave cut short) are not strays.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from apiflow.analysis.adaptive_section import latest_record
from apiflow.errors import UsageError
from apiflow.results.source import open_source
from apiflow.results.store import ResultStore
from cluster.plan import PlannedTrial, attempts_toward_bound, failed_attempts, final_ids, plan_grid
from cluster.spec import GridSpec
from cluster.waves import sweep_plan
from cluster.worker import load_checked_bank


@dataclass
class Verdict:
    """What ``verify_store`` found."""

    planned: int
    stored: int
    missing: int
    stray: int = 0
    untranscribed: int = 0
    duplicated: int = 0
    damaged: list[str] = field(default_factory=list)
    final: int = 0
    """Planned trials without a row that are unscored, final (``bound`` unscored attempts on record)."""
    bound: int | None = None
    unneeded: int = 0
    """An adaptive grid's trials its sweep did not run (beyond every model's recorded prefix)."""

    @property
    def whole(self) -> bool:
        """Every planned trial stored, with its transcript, and nothing damaged."""
        return not (self.missing or self.untranscribed or self.damaged)

    def lines(self) -> list[str]:
        out = [
            f"  rows: {self.stored} of {self.planned} "
            + ("trials its sweep ran" if self.unneeded else "planned trials")
            + " stored"
            + (f"; {self.final} unscored, final ({self.bound} unscored attempts each, the provider's or the "
               "harness's; grid run --retry-unscored runs them again)" if self.final else "")
            + (f"; {self.missing} missing: rerun the grid to fill them" if self.missing else "")
            + (f"; {self.stray} rows of trials the plan does not hold" if self.stray else "")
            + (f"; {self.unneeded} trials of the plan the sweep did not need" if self.unneeded else ""),
            "  transcripts: "
            + (f"{self.untranscribed} stored trials have none" if self.untranscribed else "every stored trial has one"),
            "  duplicates: "
            + (f"{self.duplicated} trial ids in more than one row object (readers keep the first)"
               if self.duplicated else "none"),  # fmt: skip
            "  checksums: "
            + (f"{len(self.damaged)} damaged objects set aside under quarantine/: " + ", ".join(self.damaged[:5])
               + (" ..." if len(self.damaged) > 5 else "") if self.damaged else "every object read passed"),  # fmt: skip
        ]
        return out


def verify_store(
    store: ResultStore,
    planned_ids: set[str],
    full: bool = True,
    bound: int | None = None,
    plan_ids: set[str] | None = None,
) -> Verdict:
    """Hold ``store`` against the planned trial ids. ``full``: also count duplicate rows and look for
    each stored trial's transcript (the end of a run reads back the rows alone). ``bound``: the
    grid's ``max_unscored_attempts`` (a trial unscored that often is final, not missing); None: none.
    ``plan_ids``: the whole plan when ``planned_ids`` is the part an adaptive sweep ran."""
    done = store.done_ids()
    plan_ids = planned_ids if plan_ids is None else plan_ids
    unstored = planned_ids - done
    final: set[str] = set()
    if bound is not None and unstored:
        final = final_ids(attempts_toward_bound(failed_attempts(store, done)), bound) & unstored
    verdict = Verdict(
        planned=len(planned_ids),
        stored=len(done & planned_ids),
        missing=len(unstored - final),
        stray=len(done - plan_ids),
        final=len(final),
        bound=bound,
        unneeded=len(plan_ids - planned_ids),
    )
    if full:  # every row object read again, repeats kept
        verdict.duplicated = sum(1 for n in collections.Counter(store.row_ids()).values() if n > 1)
    if full and done:
        try:
            shown = {path.rsplit("/", 1)[-1].removesuffix(".json") for path in open_source(store.url, store.storage_options).paths}
        except UsageError:  # no transcript at all
            shown = set()
        verdict.untranscribed = len(done - shown)
    verdict.damaged = [q.path for q in store.quarantine.found]
    return verdict


def grid_verify(out: str, storage_options: dict[str, Any] | None = None) -> tuple[list[str], bool]:
    """The verify verb: lines to print and whether the store is whole."""
    store = ResultStore(out, storage_options)
    manifest = store.read_manifest()
    if manifest is None:
        raise UsageError(f"{out} holds no grid (no manifest.json)")
    spec = GridSpec.model_validate(manifest["grid"])
    try:
        plan = plan_grid(spec, load_checked_bank(spec))
    except UsageError as exc:
        raise UsageError(f"cannot rebuild the plan of {out} here: {exc}") from None
    everything = {p.trial_id for p in plan}
    sweep = latest_record(store) if spec.question is not None else None
    ran = swept_ids(spec, plan, sweep) if sweep is not None else everything
    verdict = verify_store(store, ran, bound=spec.max_unscored_attempts, plan_ids=everything)
    head = f"grid {spec.name} at {out}: " + ("whole" if verdict.whole else "NOT WHOLE")
    return [head, *verdict.lines()], verdict.whole


def swept_ids(spec: GridSpec, plan: list[PlannedTrial], sweep: dict[str, Any]) -> set[str]:
    """The trial ids an adaptive grid's sweep ran: each model's recorded prefix of the unit order."""
    order = sweep_plan(spec, plan, collections.defaultdict(float))
    counts = np.array([int(sweep["counts"].get(m.slug, 0)) for m in spec.models])
    return order.prefix_ids(counts)
