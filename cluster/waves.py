"""An adaptive sweep on the grid runner: waves of the open models' next units (docs/design/051 §4, §7).

A grid with a ``question`` runs its plan's units in one seeded uniform random order
(``adaptive.unit_order``, seeded by the grid's seed). A unit is a (task slot, epoch) of the plan;
every model runs the same order, and a model's trials are always a prefix of it. Each wave sends
the open models' next units (``adaptive.next_wave``) to the run's actors, waits for them, rebuilds
the outcome matrix from the store's rows and asks ``adaptive.assess`` what is still open. The sweep
stops at the first of ``answered``, ``cap`` (not one more unit fits the grid's budget, on expected
cost) and ``exhausted`` (the open models have run every unit). Inside its wave an unscored trial
is retried up to the grid's bound, then counts as not passed (051 §3).

A resumed sweep starts where the store leaves it: each model's count is the longest prefix of the
order whose trials are stored or unscored, final. The cap prices each trial as the dry-run
estimate does (``cluster.estimate``); a plan that costs nothing counts trials instead (each priced
1, so ``budget_usd: 60`` stops after 60 trials). The budget ledger stays the hard stop on real spend.
The record (the question, the order's seed, the units, each wave's counts, the stop) is kept in the
run's attempt object under ``adaptive``; ``apiflow grid status`` and ``apiflow report`` read it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from pydantic import ValidationError

from apiflow.analysis.adaptive import (
    Assessment,
    Question,
    Stop,
    assess,
    next_wave,
    parse_question,
    paths,
    unit_order,
)
from apiflow.errors import UsageError
from apiflow.results.store import ResultStore
from apiflow.results.taskid import parse_task_id
from cluster.plan import PlannedTrial, attempts_toward_bound, failed_attempts, final_ids
from cluster.spec import GridSpec

Unit = tuple[str, int, int]
"""(task id, task slot seed, epoch): one unit of the plan, run by every model."""


def question_override(
    spec: GridSpec, ask: str | None, level: float | None, step: float | None = None, each: bool = False
) -> GridSpec:
    """The grid with ``--question`` / ``--level`` / ``--step`` / ``--each`` applied (what is not given
    is the grid's own).

    Raises:
        UsageError: One of the others without a question, or a question the grid cannot ask (one line).
    """
    if ask is None and level is None and step is None and not each:
        return spec
    base = spec.question
    if ask is None and base is None:
        given = "--level" if level is not None else "--step" if step is not None else "--each"
        raise UsageError(f"{given} needs a question: give --question, or a question: in the grid")
    asked = {**(base.model_dump() if base is not None else {}), "ask": ask or (base.ask if base else "")}
    flags = {"level": level, "step": step, "joint": False if each else None}
    asked.update({key: value for key, value in flags.items() if value is not None})
    try:
        return spec.with_overrides(question=asked)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][-1]) if first["loc"] else ""
        flag = f"--{field}" if field in ("level", "step") else "--question"
        value = asked[field] if field in ("level", "step") else asked["ask"]
        raise UsageError(f"{flag} {value}: {first['msg'].removeprefix('Value error, ')}") from None


def resolved_question(spec: GridSpec) -> tuple[Question, str]:
    """The grid's question, its ``better`` pair named by slug, and its text so spelt."""
    assert spec.question is not None
    asked = spec.question
    question = parse_question(asked.ask, asked.level, asked.joint)
    if question.kind != "better":
        return question, asked.ask
    slug = {name: m.slug for m in spec.models for name in (m.model, m.slug)}
    pair = (slug[question.pair[0]], slug[question.pair[1]])
    text = f"better:{pair[0]},{pair[1]}" + (f",{question.margin:g}" if question.margin else "")
    return dataclasses.replace(question, pair=pair), text


@dataclass
class SweepPlan:
    """The plan as a sweep sees it: each model's trial and expected cost at each position of the order."""

    question: Question
    ask: str
    models: list[str]
    units: list[Unit]
    seed: int
    order: np.ndarray
    """``order[k]``: the index in ``units`` of the unit at position k."""
    trials: list[list[PlannedTrial]]
    """``trials[m][k]``: model m's trial of the unit at position k."""
    costs: np.ndarray
    step: int
    cap: float | None
    per_trial: bool
    """The plan costs nothing: each trial is priced 1 and the cap counts trials."""

    @property
    def population(self) -> int:
        return len(self.units)

    def spent(self, counts: np.ndarray) -> float:
        """Expected cost of every model's prefix."""
        return float(sum(self.costs[m, : int(n)].sum() for m, n in enumerate(counts)))

    def wave_trials(self, counts: np.ndarray, wave: np.ndarray) -> list[PlannedTrial]:
        """The trials of ``wave[m]`` more units of each model, position by position (a cut stays even)."""
        out = []
        for k in range(int(counts.min(initial=0)), int((counts + wave).max(initial=0))):
            out += [self.trials[m][k] for m in range(len(self.models)) if counts[m] <= k < counts[m] + wave[m]]
        return out

    def prefix_ids(self, counts: np.ndarray) -> set[str]:
        """The trial ids of every model's prefix: what the sweep ran."""
        return {p.trial_id for m, n in enumerate(counts) for p in self.trials[m][: int(n)]}

    def lines(self) -> list[str]:
        """The sweep's plan, printed under the estimate."""
        cap = "no cap" if self.cap is None else (
            f"cap {self.cap:g} trials (the plan costs nothing: each trial counts 1)" if self.per_trial
            else f"cap ${self.cap:,.2f} of expected cost")  # fmt: skip
        return [
            f"  question: {self.question.describe()} (adaptive: the estimate is the whole plan's, the sweep "
            "stops when the answer is known)",
            f"    {self.population} units (task, epoch) per model in one order seeded {self.seed}; waves of "
            f"{self.step} units per open model; {cap}",
        ]


def sweep_plan(spec: GridSpec, plan: list[PlannedTrial], expected: Mapping[tuple[int, str, int], float]) -> SweepPlan:
    """The sweep of ``plan`` (the whole grid's), each trial priced by ``expected`` (``estimate.expected_costs``)."""
    assert spec.question is not None
    question, ask = resolved_question(spec)
    units = sorted({(p.task_id, p.seed, p.epoch) for p in plan}, key=lambda u: (u[2], u[0], u[1]))
    index = {u: i for i, u in enumerate(units)}
    order = unit_order(len(units), spec.base_seed)
    position = np.empty(len(units), dtype=np.int64)
    position[order] = np.arange(len(units))
    shape = (len(spec.models), len(units))
    trials: list[list[Any]] = [[None] * shape[1] for _ in spec.models]
    costs = np.zeros(shape)
    for p in plan:
        k = int(position[index[(p.task_id, p.seed, p.epoch)]])
        ref = parse_task_id(p.task_id)
        trials[p.model_index][k], costs[p.model_index, k] = p, expected[(p.model_index, ref.kind, ref.length)]
    if any(t is None for row in trials for t in row):
        raise UsageError("a question needs the grid's whole plan: every model on every (task, epoch)")
    free = not costs.any()
    return SweepPlan(
        question, ask, [m.slug for m in spec.models], units, spec.base_seed, order, trials,
        np.ones(shape) if free else costs, max(1, math.ceil(spec.question.step * len(units))), spec.budget_usd, free,
    )  # fmt: skip


# ---- the outcome matrix from the store (pure, but for ``read_store``) ----------------------------


@dataclass(frozen=True)
class Revealed:
    """What the store says of the grid's trials: stored rows' verdicts and the unscored, final ones."""

    passed: Mapping[str, bool]
    final: AbstractSet[str]


def read_store(store: ResultStore, bound: int) -> Revealed:
    """Every stored row's pass, and the trials without a row unscored ``bound`` times (final)."""
    rows = store.read_rows().select(["trial_id", "passed"]).to_pylist()
    passed = {r["trial_id"]: bool(r["passed"]) for r in rows}
    final = final_ids(attempts_toward_bound(failed_attempts(store, passed.keys())), bound)
    return Revealed(passed, final - passed.keys())


def outcome_matrix(sp: SweepPlan, passed: Mapping[str, bool], final: AbstractSet[str]) -> np.ndarray:
    """(models, units) in order positions: 1 passed, 0 failed or unscored for good, NaN not resolved yet."""
    x = np.full((len(sp.models), sp.population), np.nan)
    for m, row in enumerate(sp.trials):
        for k, p in enumerate(row):
            if p.trial_id in passed:
                x[m, k] = float(passed[p.trial_id])
            elif p.trial_id in final:
                x[m, k] = 0.0
    return x


def prefix_counts(x: np.ndarray) -> np.ndarray:
    """Each model's longest resolved prefix of the order (what its count is)."""
    unresolved = np.isnan(x)
    return np.where(unresolved.any(axis=1), unresolved.argmax(axis=1), x.shape[1]).astype(np.int64)


def assess_matrix(sp: SweepPlan, x: np.ndarray, counts: np.ndarray) -> Assessment:
    """``adaptive.assess`` of the outcomes ``x`` at ``counts`` (at least one unit run)."""
    alpha_rate, alpha_pair = sp.question.alphas(len(sp.models))
    seen = np.nan_to_num(x[:, : max(int(counts.max()), 1)])  # beyond a model's count: never read
    return assess(sp.question, sp.models, paths(seen, sp.population, alpha_rate, alpha_pair), counts)


# ---- the sweep ------------------------------------------------------------------------------------


class Runs(Protocol):
    """What a sweep needs of the driver's ``cluster.fleet.Fleet`` (a test passes a fake)."""

    @property
    def halted(self) -> bool: ...

    @property
    def tally(self) -> Any: ...

    def run(self, todo: list[PlannedTrial]) -> None: ...


@dataclass
class Sweep:
    """One run's sweep: where it starts, its waves, why it stops, and the record it keeps."""

    plan: SweepPlan
    read: Callable[[], Revealed]
    """What the store holds now (``read_store``; a test passes its own)."""
    bound: int
    retry_unscored: bool = False
    write: Callable[[dict[str, Any]], None] | None = None
    """Called with the record after each wave (``store.write_attempt`` of the run's attempt)."""
    counts: np.ndarray = field(init=False)
    started: np.ndarray = field(init=False)
    wave: np.ndarray | None = None
    stop: Stop = ""
    halted: str = ""
    waves: list[dict[str, Any]] = field(default_factory=list)
    assessment: Assessment | None = None
    stale: set[str] = field(default_factory=set)
    """With ``--retry-unscored``: the trials final before this run, to be tried once more."""
    retried: set[str] = field(default_factory=set)

    def start(self) -> None:
        """Counts from the store, then the first wave, or the stop when the store already answers."""
        found = self.read()
        if self.retry_unscored:
            self.stale = set(found.final)
        x = outcome_matrix(self.plan, found.passed, self._final(found))
        self.counts = self.started = prefix_counts(x)
        if self.counts.any():
            self._decide(x)
        else:
            sp = self.plan
            first = sp.question.involved(sp.models)
            self.wave = next_wave(first, self.counts, sp.population, sp.step, sp.costs, 0.0, sp.cap)
            self.stop = "" if self.wave.any() else "cap"

    def _final(self, found: Revealed) -> AbstractSet[str]:
        return found.final - (self.stale - self.retried)

    def _decide(self, x: np.ndarray) -> None:
        sp = self.plan
        self.assessment = found = assess_matrix(sp, x, self.counts)
        self.wave = None
        if found.answered:
            self.stop = "answered"
        elif not found.open_models.any():
            self.stop = "exhausted"
        else:
            spent = sp.spent(self.counts)
            self.wave = next_wave(found.open_models, self.counts, sp.population, sp.step, sp.costs, spent, sp.cap)
            self.stop = "" if self.wave.any() else "cap"

    def run(self, fleet: Runs) -> None:
        """Waves until the sweep stops, or the fleet can send nothing more (budget, lease, stall, Ctrl-C)."""
        self._write()
        while not self.stop and self.wave is not None:
            before = self.counts
            trials = self.plan.wave_trials(self.counts, self.wave)
            fleet.tally.note = f"wave {len(self.waves) + 1}: {len(trials)} trials, open {len(self.open_models)}"
            try:
                x, ran = self._run_wave(fleet, trials)
            except KeyboardInterrupt:
                self.halted = "interrupted"
                self._write()
                raise
            self.counts = prefix_counts(x)
            self._decide(x)
            self.waves.append(self._wave_entry(ran))
            if not self.stop and fleet.halted:
                self.halted = "the run could send no more trials (budget, lease, stall or a parked provider)"
            elif not self.stop and (self.counts == before).all():
                self.halted = "no unit of the wave could be settled (its trials were left for the next run)"
            self._write()
            if self.halted:
                return

    def _run_wave(self, fleet: Runs, trials: list[PlannedTrial]) -> tuple[np.ndarray, int]:
        """Send the wave; again its unscored trials, up to the grid's bound; the matrix after it."""
        found, ran = self.read(), 0
        for _ in range(self.bound + 1):
            final = self._final(found)
            todo = [p for p in trials if p.trial_id not in found.passed and p.trial_id not in final]
            if not todo or fleet.halted:
                break
            self.retried.update(p.trial_id for p in todo)
            fleet.tally.total = fleet.tally.done + len(todo)  # the live line's count: this wave
            fleet.run(todo)
            ran += len(todo)
            found = self.read()
        return outcome_matrix(self.plan, found.passed, self._final(found)), ran

    def _wave_entry(self, ran: int) -> dict[str, Any]:
        return {"counts": self._by_model(self.counts), "trials": ran, "spent": self.plan.spent(self.counts),
                "open": self.open_models, "verdict": self.assessment.verdict if self.assessment else ""}  # fmt: skip

    def _by_model(self, counts: np.ndarray) -> dict[str, int]:
        return {slug: int(n) for slug, n in zip(self.plan.models, counts, strict=True)}

    @property
    def open_models(self) -> list[str]:
        """The models the question still needs (all it names before the first assessment)."""
        sp = self.plan
        wanted = self.assessment.open_models if self.assessment is not None else sp.question.involved(sp.models)
        return [] if self.stop == "answered" else [s for s, w in zip(sp.models, wanted, strict=True) if w]

    def record(self) -> dict[str, Any]:
        """What the store keeps (the attempt's ``adaptive``) and the summary and report read."""
        sp = self.plan
        return {
            "question": sp.ask, "describe": sp.question.describe(), "level": sp.question.level,
            "joint": sp.question.joint, "step": sp.step, "order_seed": sp.seed, "population": sp.population,
            "models": sp.models, "units": [list(u) for u in sp.units], "cap": sp.cap,
            "cost_unit": "trial" if sp.per_trial else "usd", "started_at": self._by_model(self.started),
            "waves": self.waves, "counts": self._by_model(self.counts), "spent": sp.spent(self.counts),
            "open": self.open_models, "stop": self.stop, "halted": self.halted,
            "verdict": self.assessment.verdict if self.assessment is not None else "",
        }  # fmt: skip

    def _write(self) -> None:
        if self.write is not None:
            self.write(self.record())
