"""What a grid run tells its user: the dry-run estimate, the end-of-run summary, ``grid status``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apiflow.models.retry import QUOTA_KIND
from cluster.budget import SpendOnRecord
from cluster.progress import Tally
from cluster.spec import GridSpec


@dataclass
class GridSummary:
    """The outcome of one ``run_grid`` call."""

    spec: GridSpec
    planned: int
    already_done: int
    tally: Tally = field(default_factory=Tally)
    not_started: int = 0
    abandoned: int = 0
    budget_reached: bool = False
    ledger: dict[str, Any] | None = None
    gates: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    per_model: dict[int, dict[str, Any]] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    driver_peak_rss_mb: float = 0.0
    on_record: SpendOnRecord | None = None
    """With a budget: the spend earlier attempts left on record (the ledger's starting point)."""
    stalled: bool = False
    """The run ended because no actor could be placed for ``STALL_S`` (resume when capacity returns)."""
    driver_cpu_s: float = 0.0
    driver_trial_cpu_s: float = 0.0
    """The driver's CPU in the trial phase alone (dispatch, outcomes, progress)."""
    workers: list[dict[str, Any]] = field(default_factory=list)
    """Each actor's ``TrialWorker.stats()`` at the end of the run."""
    parked: dict[str, int] = field(default_factory=dict)
    """Providers whose account ran out of quota or credit, and their trials left pending."""
    interrupted: bool = False
    """Stopped by Ctrl-C: what finished is stored."""
    grid_planned: int | None = None
    """With ``--models/--tasks/--epochs``: the whole grid's planned trials (``planned`` is the selection's)."""
    stored_at_stop: int = 0
    """After a Ctrl-C: the plan's trials the store holds (actors may have stored what the driver never saw)."""
    lease_lost: str = ""
    """Another driver took the results folder while this one ran (its lease lapsed)."""
    resume: str = ""
    """The command that resumes this grid."""
    verdict: Any = None
    """The store read back at the end (``cluster.verify.Verdict``), when the run thought it complete."""
    already_final: int = 0
    """Planned trials not run: unscored ``spec.max_unscored_attempts`` times before this run."""
    attempts: dict[str, int] = field(default_factory=dict)
    """Unscored attempts on record (toward the bound) per trial without a row; this run's added."""
    retry_unscored: bool = False
    """``--retry-unscored``: the trials already final were planned again."""
    final_now: set[str] = field(default_factory=set)
    """Trials this run's unscored outcome brought to the bound."""
    sweep: dict[str, Any] | None = None
    """An adaptive run's record (``cluster.waves.Sweep.record``): its question, counts and stop."""

    def model(self, index: int) -> dict[str, Any]:
        """Per-model counters (created on first use)."""
        return self.per_model.setdefault(
            index, {"scored": 0, "passed": 0, "harness": 0, "final": 0, "spent_usd": 0.0}
        )

    def unscored(self, outcome: Any) -> None:
        """One more unscored attempt of ``outcome``'s trial (a ``TrialOutcome``); at the bound the trial
        is final. An account out of quota is not an attempt (``cluster.plan.attempts_toward_bound``)."""
        if outcome.fault == QUOTA_KIND or outcome.trial_id in self.final_now:
            return
        attempts = self.attempts.get(outcome.trial_id, 0) + 1
        self.attempts[outcome.trial_id] = attempts
        if attempts >= self.spec.max_unscored_attempts:
            self.final_now.add(outcome.trial_id)
            self.tally.final += 1
            self.model(outcome.model_index)["final"] += 1

    @property
    def final_total(self) -> int:
        """Planned trials unscored, final: before this run (unless retried) and by it."""
        return self.already_final + self.tally.final

    @property
    def complete(self) -> bool:
        """Every planned trial is stored (duplicates: stored by an attempt whose actor then died) or
        unscored, final, and the store, read back at the end, holds every stored one."""
        t = self.tally
        if self.sweep is not None:  # a sweep is done when it stops by its own rule, not when all is stored
            return self.sweep["stop"] in ("answered", "exhausted") and (self.verdict is None or not self.verdict.missing)
        counted = self.already_done + t.stored + t.duplicates + self.final_total == self.planned
        return counted and (self.verdict is None or self.verdict.missing == 0)

    def plan_lines(self) -> list[str]:
        """What the plan leaves out as unscored, final (or plans again), printed under the estimate."""
        bound = self.spec.max_unscored_attempts
        if self.retry_unscored:
            again = sum(n >= bound for n in self.attempts.values())
            return [f"  --retry-unscored: {again} unscored, final trials planned again"] if again else []
        if not self.already_final:
            return []
        return [
            f"  {self.already_final} trials unscored, final ({bound} unscored attempts each: the provider or the "
            "harness, never the agent): not planned again; --retry-unscored plans them"
        ]

    def lines(self, dry_run: bool = False, verbose: bool = False) -> list[str]:
        """The summary as printed at the end of a run: the grid first (what is stored, what passed, the
        spend on record) and where to look next; ``verbose`` adds where the time and CPU went."""
        t = self.tally
        if dry_run:
            todo = self.planned - self.already_done - self.already_final
            final = f"; {self.already_final} unscored, final (--retry-unscored runs them)" if self.already_final else ""
            most = "at most " if self.sweep is not None else ""
            return [f"dry run: {most}{todo} of {self.planned} trials would run{final}; nothing started"]
        stored_total = self.already_done + t.stored + t.duplicates
        if self.verdict is not None:  # what the store holds, read back, not what the run counted
            stored_total = self.verdict.stored
        final = f", {self.final_total} unscored, final" if self.final_total else ""
        out = [
            f"grid {self.spec.name}: {stored_total}/{self.planned} trials stored "
            f"({self.already_done} before this run, {t.stored} now){final} in {self.wall_s:.1f}s -> {self.spec.out}",
            f"  this run: scored {t.scored}, passed {t.passed}"
            + (f" ({_rates(t.passed, t.scored, t.harness)})" if t.scored or t.harness else "")
            + f"; unscored (harness/provider) {t.harness}"
            + (f": {t.harness - t.final} retried on resume, {t.final} final" if t.final else ", retried on resume"),
            f"  spend ${t.spent_usd:.4f} by this run; ${self.grid_usd:.4f} on record for the grid"
            + (f" (cap ${self.spec.budget_usd:.2f})" if self.spec.budget_usd else "")
            + f"; provider retries {t.retries}; re-queued after actor loss {t.requeued}"
            + (f"; found already stored on re-queue {t.duplicates}" if t.duplicates else ""),
        ]
        out.extend(self._model_lines())
        out.extend(sweep_lines(self.sweep) if self.sweep is not None else [])
        if verbose:
            out.extend(self._profile_lines())
        return out + self._ending_lines(stored_total)

    def _profile_lines(self) -> list[str]:
        """Where the time and CPU went (``--verbose``)."""
        out = []
        if self.phases:
            out.append(
                "  time: "
                + ", ".join(f"{k[:-2]} {v:.1f}s" for k, v in self.phases.items())
                + f"; driver peak RSS {self.driver_peak_rss_mb:.0f} MB"
            )
        out.extend(self._worker_lines())
        return out

    def _ending_lines(self, stored_total: int) -> list[str]:
        t, out = self.tally, []
        if self.gates:
            waits = ", ".join(f"{g['provider']}: {g['rate_limited']} 429s, {g['waited_s']:.1f}s waited{_learned(g)}"
                              for g in self.gates)  # fmt: skip
            out.append(f"  rate limits: {waits}")
        out.extend(_batch_tier_lines(self.workers))
        if self.on_record is not None and self.on_record.total_usd > 0:
            r = self.on_record
            out.append(
                f"  budget: ${r.total_usd:.4f} already on record (rows ${r.rows_usd:.4f}, failures "
                f"${r.failures_usd:.4f}, unstored at the last driver's checkpoint ${r.unstored_usd:.4f})"
            )
        if self.verdict is not None and self.verdict.missing:
            out.append(
                f"SHORTFALL: the store holds {self.verdict.stored} of {self.planned} planned trials read back "
                f"now; {self.verdict.missing} acknowledged writes are gone (or set aside as damaged). "
                "Rerun to fill them; apiflow grid verify names the rest."
            )
        if self.interrupted:
            out.append(
                f"INTERRUPTED: {self.stored_at_stop} of {self.planned} trials stored; nothing is lost. "
                + (f"Resume with: {self.resume}" if self.resume else "Rerun the same command to resume.")
            )
        if self.lease_lost:
            out.append(f"STOPPED: {self.lease_lost}; this run sent no more trials")
        for provider, left in self.parked.items():
            out.append(
                f"PARKED {provider}: the account is out of quota or credit; {left} trials left pending "
                "(nothing burned on retries). Add credit, then rerun to continue."
            )
        if self.stalled:
            out.append("  STALLED: no worker actor could be placed; rerun when the cluster has capacity")
        if self.budget_reached:
            ledger = self.ledger or {}
            cap = ledger.get("cap_usd", self.spec.budget_usd)
            spent = ledger.get("spent_usd", t.spent_usd)
            over = ledger.get("overshoot_usd", 0.0)
            out.append(
                f"BUDGET REACHED: spent ${spent:.4f} of ${cap:.4f} on record"
                + (f" (over by ${over:.4f}: trials in flight cost more than expected)" if over else "")
                + f"; ${ledger.get('unstored_usd', 0.0):.4f} of it on trials that stored nothing; "
                f"{self.not_started} trials not started, in the planned order. "
                "Rerun with a higher --budget-usd to continue."
            )
        if self.abandoned:
            out.append(
                f"  {self.abandoned} trials lost their actor {5}+ times and were left for the next resume"
            )
        out.extend(self._final_lines())
        if not self.complete and not self.budget_reached and not self.interrupted and self.sweep is None:
            left = self.planned - stored_total - self.final_total
            out.append(
                f"  {left} trials not stored (harness/provider outcomes or abandoned): rerun to retry them"
            )
        where = self.spec.out
        out.append(f"  next: apiflow grid status {where} · apiflow report {where} · apiflow view {where}")
        return out

    @property
    def grid_usd(self) -> float:
        """Spend on record for the whole grid: earlier attempts plus this run's billed calls."""
        before = self.on_record.total_usd if self.on_record else 0.0
        if self.ledger is not None:
            return float(self.ledger["spent_usd"])
        return before + self.tally.spent_usd

    def _final_lines(self) -> list[str]:
        """The trials left unscored for good, and how to run them anyway."""
        if not self.final_total:
            return []
        again = f"{self.resume} --retry-unscored" if self.resume else "grid run --retry-unscored"
        return [
            f"  UNSCORED, FINAL: {self.final_total} trials reached {self.spec.max_unscored_attempts} unscored attempts "
            "(the provider or the harness failed, never the agent) and are not planned again; apiflow report "
            f"shows them as unscored (failures under --count-unscored). To retry them: {again}"
        ]

    def _model_lines(self) -> list[str]:
        """Per model, this run: scored, the pass rate on scored trials and with unscored ones as
        failures (so failures hidden as unscored trials show), unscored and final, and what it spent."""
        if len(self.spec.models) < 2 or not self.per_model:
            return []
        width = max(len(m.slug) for m in self.spec.models)
        out = []
        for index, counts in sorted(self.per_model.items()):
            scored, passed, unscored = counts["scored"], counts["passed"], counts["harness"]
            rate = f"{passed / scored:.1%}" if scored else "-"
            strict = f"{passed / (scored + unscored):.1%}" if scored + unscored else "-"
            final = f" ({counts['final']} final)" if counts["final"] else ""
            out.append(
                f"    {self.spec.models[index].slug:<{width}}  scored {scored:>5}  pass {rate:>6}  "
                f"pass (unscored = fail) {strict:>6}  unscored {unscored:>4}{final}  ${counts['spent_usd']:.4f}"
            )
        return out

    def _worker_lines(self) -> list[str]:
        batched = sum(w["trials"] for w in self.workers)
        if not batched:
            return []
        per = 1000 / batched
        play = sum(w["play_cpu_s"] for w in self.workers)
        store = sum(w["store_cpu_s"] for w in self.workers)
        total = sum(w["cpu_since_init_s"] for w in self.workers)
        done = self.tally.done or batched
        return [
            f"  workers: {len(self.workers)} actors, {batched} offline trials in batches; CPU per trial "
            f"{total * per:.3f} ms = trial {play * per:.3f} + store {store * per:.3f} + rest "
            f"{(total - play - store) * per:.3f} (Ray, dispatch, serialisation); start-up "
            + "/".join(f"{w['init_cpu_s']:.2f}" for w in self.workers)
            + " s CPU; peak RSS "
            + "/".join(f"{w['peak_rss_mb']:.0f}" for w in self.workers)
            + " MB"
            + _replayed(self.workers)
            + _regraded(self.workers)
            + _collector(self.workers, per),
            f"  driver CPU {self.driver_cpu_s:.1f} s, of which the trial phase {self.driver_trial_cpu_s:.2f} s "
            f"({self.driver_trial_cpu_s * 1000 / done:.3f} ms per trial run)",
        ]


def sweep_lines(record: dict[str, Any], run: str = "this run") -> list[str]:
    """An adaptive run in three lines: its question and why it stopped, each model's units, what is open
    (``run``: which run the record is of, as the waves are counted)."""
    free = record["cost_unit"] == "trial"
    spent = f"{record['spent']:g} trials" if free else f"${record['spent']:,.2f}"
    cap = "" if record["cap"] is None else f" of the cap's {record['cap']:g}" if free else f" of the cap's ${record['cap']:,.2f}"
    verdict = record["verdict"] or "not assessed yet"
    state = {
        "answered": f"ANSWERED ({verdict})",
        "exhausted": f"EXHAUSTED: the open models ran every unit ({verdict})",
        "cap": f"CAP: not one more wave fits the cap ({verdict}); rerun with a higher --budget-usd to continue",
    }.get(record["stop"], f"NOT SETTLED ({verdict}): {record['halted'] or 'the run ended first'}; rerun to continue")
    counts = ", ".join(f"{slug} {record['counts'][slug]}" for slug in record["models"])  # the grid's order
    waves = (f"{len(record['waves'])} waves {run}" if record["waves"] else
             f"no wave {run}: the store already held this" if record["stop"] else f"no wave finished {run}")  # fmt: skip
    return [
        f"  question: {record['describe']}: {state}; {waves}",
        f"    units run per model, of {record['population']} in one order seeded {record['order_seed']}: {counts}; "
        f"expected cost {spent}{cap}",
        f"    still open: {', '.join(record['open']) or 'nothing'}",
    ]


def _rates(passed: int, scored: int, unscored: int) -> str:
    """``70.0% of scored, 58.3% with unscored as failures``."""
    rate = f"{passed / scored:.1%} of scored" if scored else "none scored"
    return f"{rate}, {passed / (scored + unscored):.1%} with unscored as failures"


def _learned(gate: dict[str, Any]) -> str:
    """What the adaptive gate learned (cluster.ratelimit.Aimd): the rate it ended at, of the limit."""
    if not gate.get("adaptive") or "rpm" not in gate:
        return ""
    return (
        f", rate {gate['rpm']:.0f} of {gate['rpm_limit']:.0f} rpm"
        f" ({gate['cuts']} cuts, {gate['increases']} increases)"
    )


def _batch_tier_lines(workers: list[dict[str, Any]]) -> list[str]:
    """What the workers' batch tier did (docs/design/048): batches sent, turns answered by them, turns
    the journal answered (paid in an earlier run), and turns that went synchronous."""
    seen = [w["batch_tier"] for w in workers if w.get("batch_tier")]
    if not seen:
        return []
    n = {k: sum(b.get(k, 0) for b in seen) for k in ("batches", "submitted", "answered", "from_journal",
                                                      "reattached", "resubmitted", "missed")}  # fmt: skip
    return [
        f"  batch tier: {n['batches']} batches of {n['submitted']} turns; {n['answered']} turns answered by a "
        f"batch, {n['from_journal']} from the store's journal (paid before), {n['reattached']} by re-attaching to a "
        f"batch still running; {n['resubmitted']} resubmitted, {n['missed']} sent synchronously"
    ]


def _collector(workers: list[dict[str, Any]], per: float) -> str:
    """The cyclic collector's share (its pauses stop every trial of the actor: apiflow.agent.heap)."""
    if not all("gc_s" in w for w in workers):
        return ""
    seconds = sum(sum(w["gc_s"]) for w in workers)
    full = sum(w["gc_count"][2] for w in workers)
    longest = max(w["gc_longest_s"] for w in workers)
    return f"; collector {seconds * per:.3f} ms a trial ({full} full, longest {longest * 1000:.0f} ms)"


def _memo_stats(workers: list[dict[str, Any]], memo: str) -> tuple[list[dict[str, int]], int, int]:
    """The actors' stats of one memo (``transitions``, ``grades``): each actor's, the hits, the lookups."""
    memos = [w[memo] for w in workers if memo in w]
    hits = sum(m["hits"] for m in memos)
    return memos, hits, hits + sum(m["misses"] for m in memos)


def _replayed(workers: list[dict[str, Any]]) -> str:
    """How many world answers the actors' transition memos replayed (apiflow.world.transitions)."""
    memos, hits, asked = _memo_stats(workers, "transitions")
    if not asked:
        return ""
    held = "/".join(f"{m['edges']:,}" for m in memos)
    return f"; world answers replayed {hits / asked:.1%} of {asked:,} (edges held {held})"


def _regraded(workers: list[dict[str, Any]]) -> str:
    """How many grades the actors' grade memos replayed (apiflow.agent.grades)."""
    _, hits, asked = _memo_stats(workers, "grades")
    return f"; grades replayed {hits / asked:.1%} of {asked:,}" if asked else ""

