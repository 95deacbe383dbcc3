"""Issue 26: a trial unscored ``max_unscored_attempts`` times is final, not planned again (unless
``--retry-unscored``), and every reader accounts for it: the plan, the run summary, ``grid status``,
``grid verify`` and ``apiflow report``. No Ray: trials are played in this process, failed attempts
are written as the workers write them (``ResultStore.put_trial`` of a provider outcome)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from apiflow.cli import main
from apiflow.results.prices import load_price_table
from apiflow.results.record import ApiflowBlock, Provenance, Termination, TrialRecord
from apiflow.results.rows import record_to_row
from apiflow.results.store import ResultStore
from cluster.budget import spend_on_record
from cluster.driver import _tally, absolute_paths, run_grid
from cluster.manifest import build_manifest, grid_id
from cluster.plan import PlannedTrial, plan_grid, resume_plan
from cluster.progress import Tally
from cluster.report import GridSummary
from cluster.spec import GridSpec, load_grid
from cluster.status import grid_status
from cluster.verify import grid_verify
from cluster.worker import TrialOutcome, TrialRunner, load_checked_bank

ROOT = Path(__file__).resolve().parents[2]
SERVER = "LiteLLMProviderError: InternalServerError: litellm.InternalServerError: down"
QUOTA = "LiteLLMProviderError: QuotaExhausted: RateLimitError: You exceeded your current quota"


class Grid:
    """Four trials: oracle and blank on two tasks. ``a`` (oracle) and ``b`` (blank) are stored;
    ``c`` (oracle) failed unscored 3 times, ``d`` (blank) twice."""

    def __init__(self, tmp_path: Path) -> None:
        data = yaml.safe_load((ROOT / "configs/grids/demo.yaml").read_text())
        data.update(models=[{"model": "apiflow/oracle"}, {"model": "apiflow/blank"}], epochs=1,
                    out=str(tmp_path / "out"), tasks={"ids": ["sample-w01-sub01", "sample-w01-sub02"]})  # fmt: skip
        data.pop("budget_usd", None)
        self.file = tmp_path / "grid.yaml"
        self.file.write_text(yaml.safe_dump(data))
        self.spec = absolute_paths(load_grid(self.file), ROOT)
        bank = load_checked_bank(self.spec)
        self.plan = plan_grid(self.spec, bank)
        self.store = ResultStore(self.spec.out)
        self.store.write_manifest(build_manifest(self.spec, bank, load_price_table(self.spec.price_table), 4))
        self.run_id = grid_id(self.spec, bank)[:22]
        oracle = [t for t in self.plan if t.model_index == 0]
        blank = [t for t in self.plan if t.model_index == 1]
        self.a, self.c, self.b, self.d = *oracle, *blank
        self.play(self.a, self.b)
        for attempt in range(3):
            self.fail(self.c, attempt)
        for attempt in range(2):
            self.fail(self.d, attempt)

    def play(self, *trials: PlannedTrial) -> None:
        asyncio.run(TrialRunner(self.spec, self.run_id).run_batch(list(trials)))

    def fail(self, trial: PlannedTrial, attempt: int, error: str = SERVER) -> None:
        """One unscored attempt of ``trial`` on record, as a worker stores a provider outcome."""
        model = self.spec.models[trial.model_index]
        record = TrialRecord(
            model=model.slug, model_api=model.model, task_id=trial.task_id, trial=trial.epoch,
            provenance=Provenance(run_id=self.run_id, epoch=trial.epoch, created=f"2026-12-01T00:00:{attempt:02d}+00:00"),
            apiflow=ApiflowBlock(trial_id=trial.trial_id, bank="sample", bank_hash="0" * 64, seed=trial.seed,
                                 termination=Termination.PROVIDER_ERROR, harness_error=error, cost_usd=0.01),
        )  # fmt: skip
        assert self.store.put_trial(record, record_to_row(record))


@pytest.fixture
def grid(tmp_path) -> Grid:
    return Grid(tmp_path)


def test_a_trial_unscored_three_times_is_not_planned_a_fourth_time(grid):
    resume = resume_plan(grid.plan, grid.store, bound=3)
    assert [t.trial_id for t in resume.todo] == [grid.d.trial_id]  # twice unscored: retried
    assert (resume.stored, resume.final) == (2, 1)
    assert resume.attempts == {grid.c.trial_id: 3, grid.d.trial_id: 2}
    forced = resume_plan(grid.plan, grid.store, bound=3, retry_unscored=True)
    assert {t.trial_id for t in forced.todo} == {grid.c.trial_id, grid.d.trial_id} and forced.final == 0
    assert {t.trial_id for t in resume_plan(grid.plan, grid.store, bound=4).todo} == {grid.c.trial_id, grid.d.trial_id}
    # The ledger rebuild still reads every attempt's cost: five failure rows of $0.01.
    assert spend_on_record(grid.store).failures_usd == pytest.approx(0.05)


def test_an_account_out_of_quota_is_no_attempt(grid):
    for attempt in range(3, 6):
        grid.fail(grid.d, attempt, QUOTA)
    resume = resume_plan(grid.plan, grid.store, bound=3)
    assert grid.d.trial_id in {t.trial_id for t in resume.todo} and resume.attempts[grid.d.trial_id] == 2


def test_the_bound_is_the_grids_setting():
    assert GridSpec.model_validate({"models": [{"model": "apiflow/oracle"}]}).max_unscored_attempts == 3
    with pytest.raises(ValueError, match="max_unscored_attempts"):
        GridSpec.model_validate({"models": [{"model": "apiflow/oracle"}], "max_unscored_attempts": 0})


def test_the_plan_printout_and_the_dry_run_count_it_final(grid, capsys):
    summary = run_grid(grid.spec, dry_run=True, progress=False)
    err = capsys.readouterr().err
    assert "3 trials planned, 2 already stored, 1 to run" in err
    assert "1 trials unscored, final (3 unscored attempts each" in err and "--retry-unscored plans them" in err
    assert summary.lines(dry_run=True) == [
        "dry run: 1 of 4 trials would run; 1 unscored, final (--retry-unscored runs them); nothing started"
    ]
    assert main(["grid", "run", str(grid.file), "--dry-run", "--retry-unscored"]) == 0
    out = capsys.readouterr()
    assert "--retry-unscored: 1 unscored, final trials planned again" in out.err
    assert "dry run: 2 of 4 trials would run; nothing started" in out.out


def _outcome(trial: PlannedTrial, **changes) -> TrialOutcome:
    fields = {"trial_id": trial.trial_id, "model_index": trial.model_index, "stored": True, "passed": None,
              "harness": True, "termination": "provider_error", "cost_usd": 0.01, "retries": 7,
              "fault": "InternalServerError"}  # fmt: skip
    return TrialOutcome(**{**fields, **changes})


def test_the_run_summary_counts_a_trial_final_at_its_third_unscored_attempt(grid):
    resume = resume_plan(grid.plan, grid.store, bound=3)
    summary = GridSummary(spec=grid.spec, planned=4, already_done=resume.stored, already_final=resume.final,
                          attempts=dict(resume.attempts))  # fmt: skip
    summary.tally = tally = Tally()
    summary.resume = f"apiflow grid run {grid.file} --out {grid.spec.out}"
    _tally(tally, _outcome(grid.d, fault="QuotaExhausted"), summary)  # the account, not an attempt
    assert tally.final == 0 and not summary.complete
    _tally(tally, _outcome(grid.d), summary)  # d's third: final
    assert (tally.harness, tally.final, summary.final_total) == (2, 1, 2) and summary.complete
    lines = summary.lines()
    assert lines[0].startswith("grid demo: 2/4 trials stored (2 before this run, 0 now), 2 unscored, final in ")
    assert lines[1] == ("  this run: scored 0, passed 0 (none scored, 0.0% with unscored as failures); "
                        "unscored (harness/provider) 2: 1 retried on resume, 1 final")  # fmt: skip
    assert any(line.startswith("  UNSCORED, FINAL: 2 trials reached 3 unscored attempts") and
               line.endswith(f"To retry them: apiflow grid run {grid.file} --out {grid.spec.out} --retry-unscored")
               for line in lines)  # fmt: skip
    blank = next(line for line in lines if line.startswith("    apiflow-blank"))
    assert "pass (unscored = fail)      -" not in blank and "unscored    2 (1 final)" in blank
    assert not any("not stored (harness/provider outcomes or abandoned)" in line for line in lines)


def test_both_pass_rates_per_model_in_the_run_summary(grid):
    summary = GridSummary(spec=grid.spec, planned=4, already_done=0)
    summary.tally = tally = Tally()
    for passed in (True, True, True, False):
        _tally(tally, _outcome(grid.a, harness=False, passed=passed, fault="", termination="answered"), summary)
    _tally(tally, _outcome(grid.c), summary)
    oracle = next(line for line in summary.lines() if line.startswith("    apiflow-oracle"))
    assert "pass  75.0%  pass (unscored = fail)  60.0%  unscored    1" in oracle
    assert "scored 4, passed 3 (75.0% of scored, 60.0% with unscored as failures)" in summary.lines()[1]


def test_grid_status_shows_final_trials_and_both_rates(grid):
    lines = grid_status(grid.spec.out)
    assert ("  done 2 / 4; remaining 1; failed (harness/provider, will retry) 1; unscored, final 1 (after 3 "
            "unscored attempts; grid run --retry-unscored runs them again)") in lines  # fmt: skip
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("model"))
    assert lines[head].split() == ["model", "planned", "done", "remaining", "failed", "final", "pass", "pass",
                                   "(unscored", "=", "fail)"]  # fmt: skip
    table = {line.split()[0]: line.split()[1:] for line in lines[head + 1 :]}
    assert table["apiflow-oracle"] == ["2", "1", "0", "0", "1", "100.0%", "50.0%"]
    assert table["apiflow-blank"] == ["2", "1", "1", "1", "0", "0.0%", "0.0%"]


def test_grid_verify_accounts_for_final_trials(grid):
    lines, whole = grid_verify(grid.spec.out)
    assert not whole and "1 unscored, final" in lines[1] and "1 missing: rerun the grid" in lines[1]
    grid.play(grid.d)  # the trial still retried gets its row: nothing is missing
    lines, whole = grid_verify(grid.spec.out)
    assert whole and lines[0].endswith(": whole")
    assert lines[1].startswith("  rows: 3 of 4 planned trials stored; 1 unscored, final (3 unscored attempts each")
    assert "missing" not in lines[1]


def test_the_report_counts_a_final_trial_once_as_unscored_of_its_model(grid, tmp_path):
    out = tmp_path / "rep"
    assert main(["report", grid.spec.out, "--out", str(out), "--bootstrap", "0"]) == 0
    oracle = json.loads((out / "summary.json").read_text())["outcomes"]["models"]["apiflow-oracle"]
    assert (oracle["trials"], oracle["unscored"], oracle["passes"]) == (2, 1, 1)  # three attempts, one trial
    assert (oracle["pass_rate_scored"], oracle["pass_rate_unscored_as_fail"]) == (1.0, 0.5)
