"""A grid with a question runs in waves and stops when the answer is known (docs/design/051 §4, §7).

The wave planner's glue is tested without Ray (a fake fleet, a fake store): the outcome matrix from
rows, the counts a resume starts from, the stop reasons, unscored trials inside a wave. One test
runs an offline grid on a private in-process Ray: capped, resumed, answered, reported.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import yaml

from apiflow.analysis.adaptive import unit_order
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.errors import UsageError
from cluster.manifest import grid_id
from cluster.plan import PlannedTrial, plan_grid
from cluster.report import GridSummary
from cluster.spec import GridSpec, load_grid
from cluster.waves import Revealed, Sweep, outcome_matrix, prefix_counts, question_override, sweep_plan

ROOT = Path(__file__).resolve().parents[2]
BANK = load_bank(DEFAULT_BANK)
PAIR = "better:apiflow/oracle,apiflow/sim:weak"


def spec(**changes) -> GridSpec:
    data = {
        "name": "adaptive", "bank": str(DEFAULT_BANK), "seed": 7, "epochs": 4,
        "models": [{"model": "apiflow/oracle"}, {"model": "apiflow/sim:weak"}],
        "price_table": str(ROOT / "configs/prices/2026-12.yaml"), "question": {"ask": PAIR},
        "concurrency": {"actors": 2, "batch": 8},
    }  # fmt: skip
    return GridSpec.model_validate({**data, **changes})


def planned(grid: GridSpec):
    plan = plan_grid(grid, BANK)
    return plan, sweep_plan(grid, plan, collections.defaultdict(float))


@dataclass
class Tally:
    done: int = 0
    total: int = 0
    note: str = ""


@dataclass
class Fleet:
    """Runs trials by a truth table into a fake store: True/False a scored outcome, None unscored."""

    truth: dict[str, bool | None]
    bound: int = 3
    passed: dict[str, bool] = field(default_factory=dict)
    unscored: collections.Counter = field(default_factory=collections.Counter)
    sent: list[str] = field(default_factory=list)
    halted: bool = False
    tally: Tally = field(default_factory=Tally)

    def run(self, todo: list[PlannedTrial]) -> None:
        for p in todo:
            self.sent.append(p.trial_id)
            self.tally.done += 1
            if self.truth[p.trial_id] is None:
                self.unscored[p.trial_id] += 1
            else:
                self.passed[p.trial_id] = bool(self.truth[p.trial_id])

    def read(self) -> Revealed:
        final = {t for t, n in self.unscored.items() if n >= self.bound}
        return Revealed(dict(self.passed), final - self.passed.keys())


def truth(sp, rates: list[float], seed: int = 0) -> dict[str, bool | None]:
    """Each model passes a seeded share of the units."""
    rng = np.random.default_rng(seed)
    return {p.trial_id: bool(rng.random() < rates[m]) for m, row in enumerate(sp.trials) for p in row}


def sweep(sp, fleet: Fleet, **kw) -> Sweep:
    found = Sweep(sp, fleet.read, fleet.bound, **kw)
    found.start()
    if not found.stop:
        found.run(fleet)
    return found


def test_every_model_runs_the_same_seeded_order_of_the_plans_units():
    grid = spec()
    plan, sp = planned(grid)
    assert sp.population == 13 * 4 and len(plan) == 2 * sp.population
    assert (sp.order == unit_order(sp.population, 7)).all()
    for k in range(sp.population):  # position k is one (task, slot seed, epoch) for both models
        a, b = sp.trials[0][k], sp.trials[1][k]
        assert (a.task_id, a.seed, a.epoch) == (b.task_id, b.seed, b.epoch) == sp.units[sp.order[k]]
    assert sp.per_trial and (sp.costs == 1).all() and sp.step == 3  # a free plan counts trials; 5 % of 52
    assert sp.ask == "better:apiflow-oracle,apiflow-sim-weak"  # the pair by slug, as rows name models
    # the question is not part of the grid: same id, same trials
    plain = spec(question=None)
    assert grid_id(grid, BANK) == grid_id(plain, BANK)
    assert [p.trial_id for p in plan] == [p.trial_id for p in plan_grid(plain, BANK)]


def test_the_outcome_matrix_and_the_prefix_a_resume_starts_from():
    _, sp = planned(spec())
    ids = [[p.trial_id for p in row] for row in sp.trials]
    passed = {ids[0][0]: True, ids[0][1]: False, ids[0][3]: True, ids[1][0]: False}
    final = {ids[0][2], ids[1][2]}  # unscored for good: a failure, not a gap
    x = outcome_matrix(sp, passed, final)
    assert x[0, :4].tolist() == [1.0, 0.0, 0.0, 1.0] and np.isnan(x[0, 4])
    assert x[1, 0] == 0.0 and np.isnan(x[1, 1]) and x[1, 2] == 0.0
    assert prefix_counts(x).tolist() == [4, 1]  # model 1's unit 1 is a gap: its later trials wait
    assert prefix_counts(np.zeros((2, 5))).tolist() == [5, 5]


def test_a_clear_pair_stops_answered_with_a_fraction_of_the_plan_and_a_resume_repeats_nothing():
    _, sp = planned(spec())
    fleet = Fleet(truth(sp, [1.0, 0.1]))
    first = sweep(sp, fleet)
    assert first.stop == "answered" and first.assessment.verdict == "yes"
    n = int(first.counts[0])
    assert first.counts.tolist() == [n, n] and n < sp.population // 2
    waves = [list(w["counts"].values()) for w in first.waves]
    assert waves == [[3 * (i + 1)] * 2 for i in range(len(waves))]  # even steps, prefixes of the order
    assert sorted(fleet.sent) == sorted(sp.prefix_ids(first.counts)) and len(set(fleet.sent)) == 2 * n
    again = sweep(sp, fleet)  # the store answers already: nothing to send
    assert again.stop == "answered" and again.waves == [] and len(fleet.sent) == 2 * n
    record = again.record()
    assert record["started_at"] == record["counts"] == {"apiflow-oracle": n, "apiflow-sim-weak": n}


def test_the_cap_stops_an_open_question_and_a_resume_continues_from_the_stored_prefix():
    grid = spec(budget_usd=12)  # a free plan's cap counts trials
    _, sp = planned(grid)
    fleet = Fleet(truth(sp, [1.0, 0.1]))
    capped = sweep(sp, fleet)
    assert capped.stop == "cap" and capped.counts.tolist() == [6, 6] and len(fleet.sent) == 12
    assert capped.record()["open"] == ["apiflow-oracle", "apiflow-sim-weak"]
    fleet.passed.pop(sp.trials[1][4].trial_id)  # a trial inside the prefix went missing
    _, uncapped = planned(spec())
    resumed = Sweep(uncapped, fleet.read, fleet.bound)
    resumed.start()
    assert resumed.counts.tolist() == [6, 4] and not resumed.stop
    resumed.run(fleet)
    assert resumed.stop == "answered"
    assert len(fleet.sent) == len(set(fleet.sent)) + 1  # only the lost trial ran twice


def test_two_models_alike_exhaust_the_plan_under_a_rank_question():
    _, sp = planned(spec(question={"ask": "rank:0", "step": 0.25}))
    same = {p.trial_id: k % 2 == 0 for row in sp.trials for k, p in enumerate(row)}
    done = sweep(sp, Fleet(same))
    assert done.stop == "exhausted" and done.counts.tolist() == [sp.population] * 2
    assert done.assessment.rank_low.tolist() == [1, 1] and done.assessment.rank_high.tolist() == [2, 2]


def test_an_unscored_trial_is_retried_in_its_wave_up_to_the_bound_then_counts_as_failed():
    _, sp = planned(spec())
    outcomes = truth(sp, [1.0, 0.1])
    flaky = sp.trials[0][1].trial_id  # the oracle's second unit never scores
    outcomes[flaky] = None
    fleet = Fleet(outcomes, bound=3)
    done = sweep(sp, fleet)
    assert fleet.sent.count(flaky) == 3 and fleet.unscored[flaky] == 3
    assert done.stop == "answered" and done.counts[0] == done.counts[1]
    x = outcome_matrix(sp, fleet.passed, fleet.read().final)
    assert x[0, 1] == 0.0  # unscored after its retries: not passed (051 §3)


def test_a_fleet_that_can_send_no_more_halts_the_sweep_unsettled():
    _, sp = planned(spec())
    fleet = Fleet(truth(sp, [1.0, 0.1]), halted=True)
    halted = sweep(sp, fleet)
    assert halted.stop == "" and "no more trials" in halted.halted and fleet.sent == []
    summary = GridSummary(spec=spec(), planned=104, already_done=0, sweep=halted.record())
    assert not summary.complete
    assert any("NOT SETTLED" in line for line in summary.lines())


def test_questions_are_checked_where_the_grid_loads_and_where_the_flags_apply(tmp_path):
    grid = tmp_path / "g.yaml"
    data = {"bank": str(DEFAULT_BANK), "models": [{"model": "apiflow/oracle"}], "question": "better:apiflow/oracle,x"}
    grid.write_text(yaml.safe_dump(data))
    with pytest.raises(UsageError, match="question .better:apiflow/oracle,x.: the grid has no model x"):
        load_grid(grid)
    grid.write_text(yaml.safe_dump({**data, "question": {"ask": "rank:1", "step": 0.1}}))
    loaded = load_grid(grid)
    assert loaded.question is not None and loaded.question.ask == "rank:1"
    moved = question_override(loaded, "width:0.05", 0.8)
    assert moved.question is not None and (moved.question.ask, moved.question.level, moved.question.step) == (
        "width:0.05", 0.8, 0.1)  # fmt: skip
    with pytest.raises(UsageError, match=r"--question rank:x: .*the forms"):
        question_override(loaded, "rank:x", None)
    with pytest.raises(UsageError, match=r"--level 2.0: Input should be less than 1"):
        question_override(loaded, None, 2.0)
    with pytest.raises(UsageError, match="--level needs a question"):
        question_override(loaded.model_copy(update={"question": None}), None, 0.9)
    assert question_override(loaded, None, None) is loaded
    stepped = question_override(loaded, None, None, step=0.2, each=True)
    assert stepped.question is not None and (stepped.question.step, stepped.question.joint) == (0.2, False)
    with pytest.raises(UsageError, match=r"--step 0.0: Input should be greater than 0"):
        question_override(loaded, None, None, step=0.0)
    with pytest.raises(UsageError, match="--each needs a question"):
        question_override(loaded.model_copy(update={"question": None}), None, None, each=True)


def test_a_sweep_refuses_a_selection(tmp_path):
    from cluster.driver import run_grid
    from cluster.selection import Selection

    with pytest.raises(UsageError, match="whole grid's order"):
        run_grid(spec(out=str(tmp_path / "o")), dry_run=True, selection=Selection(epochs=1))


@pytest.mark.slow
@pytest.mark.cluster
def test_an_offline_sweep_on_ray_stops_answered_resumes_and_reports(ray_session, tmp_path, capsys):
    from apiflow.analysis.report import build_report
    from apiflow.analysis.summary import ReportOptions
    from apiflow.cli import main
    from apiflow.results.store import ResultStore
    from cluster.driver import run_grid
    from cluster.status import grid_status

    out = tmp_path / "out"
    grid_file = tmp_path / "grid.yaml"
    grid = spec(out=str(out)).model_dump(mode="json", exclude_defaults=True)
    grid_file.write_text(yaml.safe_dump({**grid, "question": None}))
    # capped at 12 trials (a free plan's budget counts trials): the question is still open, exit 3
    assert main(["grid", "run", str(grid_file), "--question", PAIR, "--budget-usd", "12", "--no-progress"]) == 3
    printed = capsys.readouterr().out
    assert "CAP: not one more wave fits" in printed and "apiflow-oracle 6, apiflow-sim-weak 6" in printed
    # resumed without the cap: from the stored prefixes, on to the answer
    summary = run_grid(spec(out=str(out)), progress=False)
    store = ResultStore(str(out))
    ids = store.row_ids()
    n = summary.sweep["counts"]["apiflow-oracle"]
    assert summary.sweep["stop"] == "answered" and summary.complete and summary.verdict.missing == 0
    assert summary.sweep["started_at"] == {"apiflow-oracle": 6, "apiflow-sim-weak": 6}
    assert summary.tally.done == 2 * n - 12  # no trial of the first run ran again
    assert len(ids) == len(set(ids)) == 2 * n < 104 // 2
    again = run_grid(spec(out=str(out)), progress=False)  # answered already: nothing starts
    assert again.tally.done == 0 and again.sweep["waves"] == [] and again.complete
    assert main(["grid", "verify", str(out)]) == 0  # held against what the sweep ran, not the plan
    verified = capsys.readouterr().out
    assert f"{2 * n} of {2 * n} trials its sweep ran stored" in verified
    assert f"{104 - 2 * n} trials of the plan the sweep did not need" in verified
    status = "\n".join(grid_status(str(out)))
    assert "ANSWERED (yes)" in status and f"apiflow-oracle {n}, apiflow-sim-weak {n}" in status
    found, files = build_report([str(out)], tmp_path / "rep", options=ReportOptions(bootstrap=200))
    assert found["adaptive"]["stop"] == "answered" and found["adaptive"]["difference"]["low"] > 0
    board = files.leaderboard.read_text()
    assert "## Adaptive sweep" in board and f"| apiflow-oracle | {n} of 52 |" in board
