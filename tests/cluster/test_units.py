"""Pure parts of the grid runner: spec, planning and order, rate-limit buckets, the budget ledger."""

from pathlib import Path

import pytest

from apiflow.agent import TrialSpec, trial_seed
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.errors import UsageError
from apiflow.models import OFFLINE_MODELS, make_model
from apiflow.runner import play_trial_sync
from cluster.budget import Ledger
from cluster.plan import plan_grid, remaining, run_order, trial_limits
from cluster.ratelimit import RateGate
from cluster.spec import GridSpec, load_grid

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bank():
    return load_bank(DEFAULT_BANK)


def spec_of(**changes):
    data = {"models": [{"model": m} for m in OFFLINE_MODELS], "epochs": 2}
    data.update(changes)
    return GridSpec.model_validate(data)


def test_shipped_grids_load():
    demo = load_grid(ROOT / "configs/grids/demo.yaml")
    assert all(m.offline for m in demo.models) and len(demo.models) >= 5
    board = load_grid(ROOT / "configs/grids/leaderboard.yaml")
    assert len(board.models) == 19 and board.epochs == 5
    assert {m.provider for m in board.models} <= set(board.ratelimits)


def test_bad_grid_is_one_usage_error(tmp_path):
    bad = tmp_path / "g.yaml"
    bad.write_text("models: [{model: apiflow/sim:nope}]\n")
    with pytest.raises(UsageError, match="models"):
        load_grid(bad)
    bad.write_text("models: [{model: apiflow/oracle}, {model: apiflow/oracle}]\n")
    with pytest.raises(UsageError, match="unique"):
        load_grid(bad)


A = "anthropic/claude-sonnet-4-6"


@pytest.mark.parametrize(
    ("model", "named"),
    [
        (f"{{model: {A}, params: {{api: respones}}}}", "params.api must be one of"),
        (f"{{model: {A}, params: {{api: responses}}}}", "needs an openai/ model"),
        (f"{{model: {A}, params: {{cache_ttl: 1d}}}}", "params.cache_ttl must be one of"),
        (f"{{model: {A}, params: {{prompt_caching: 'yes'}}}}", "params.prompt_caching must be true or false"),
        ("{model: openai/gpt-5-mini, tier: batch, params: {api: responses}}", "tier batch needs"),
        ("{model: fireworks_ai/accounts/fireworks/models/kimi-k2p6, tier: batch}", "tier batch needs"),
        (f"{{model: {A}, tier: flex}}", "it needs an openai/ model"),
        ("{model: openai/gpt-5-mini, tier: flex, params: {service_tier: priority}}", "disagree"),
    ],
)
def test_a_transport_setting_the_route_cannot_take_is_refused_when_the_grid_loads(tmp_path, model, named):
    # Before, the worker's client refused it at each trial: a typo became a grid of harness errors.
    bad = tmp_path / "g.yaml"
    bad.write_text(f"models: [{model}]\n")
    with pytest.raises(UsageError, match=named):
        load_grid(bad)


def test_a_rate_limit_is_adaptive_unless_the_grid_says_fixed():
    spec = spec_of(ratelimits={"openai": {"rpm": 60}, "anthropic": {"rpm": 60, "adaptive": False}})
    assert spec.ratelimits["openai"].adaptive and not spec.ratelimits["anthropic"].adaptive


def test_trial_ids_are_deterministic_unique_and_follow_the_inputs(bank):
    plan = plan_grid(spec_of(), bank)
    assert len(plan) == len(OFFLINE_MODELS) * len(bank.tasks) * 2
    assert len({t.trial_id for t in plan}) == len(plan)
    assert [t.trial_id for t in plan_grid(spec_of(), bank)] == [t.trial_id for t in plan]
    reseeded = {t.trial_id for t in plan_grid(spec_of(seed=1), bank)}
    assert not reseeded & {t.trial_id for t in plan}
    hotter = spec_of(models=[{"model": "apiflow/oracle", "temperature": 0.0}])
    assert not {t.trial_id for t in plan_grid(hotter, bank)} & {t.trial_id for t in plan}
    # Output URL, budget and concurrency do not change what a trial is.
    moved = spec_of(out="s3://elsewhere/x", budget_usd=5.0, concurrency={"actors": 7})
    assert [t.trial_id for t in plan_grid(moved, bank)] == [t.trial_id for t in plan]


def test_planned_id_equals_the_id_the_agent_records(bank):
    spec = spec_of(models=[{"model": "apiflow/sim:strong"}], epochs=1)
    planned = plan_grid(spec, bank)[0]
    task = bank.task(planned.task_id)
    record = play_trial_sync(
        TrialSpec(
            task=task, world=bank.world_of(task), seed=planned.seed, epoch=1, bank_name=bank.name,
            bank_hash=bank.hash, run_id="r", limits=trial_limits(spec), model_slug=spec.models[0].slug,
        ),
        make_model("apiflow/sim:strong", task, trial_seed(planned.seed, task.id, 1)),
    )
    assert record.apiflow.trial_id == planned.trial_id


def test_order_is_epoch_major_and_any_prefix_is_balanced(bank):
    plan = plan_grid(spec_of(), bank)
    epochs = [t.epoch for t in plan]
    assert epochs == sorted(epochs)
    first_epoch = [t for t in plan if t.epoch == 1]
    prefix = first_epoch[: len(first_epoch) // 3]
    per_model = [sum(t.model_index == i for t in prefix) for i in range(len(OFFLINE_MODELS))]
    assert min(per_model) >= 0.4 * len(prefix) / len(OFFLINE_MODELS)  # no model starved by a cut
    assert run_order(list(reversed(plan)), 0) == plan  # order depends on content, not input order
    done = {t.trial_id for t in plan[:10]}
    assert remaining(plan, done) == plan[10:]


def test_worlds_are_interleaved():
    from cluster.plan import PlannedTrial

    trials = [PlannedTrial(f"{w}{i}", 0, f"x-{w}-sub01", w, 1, 0) for w in ("w01", "w02") for i in range(6)]
    trials += [PlannedTrial(f"w03{i}", 0, "x-w03-sub01", "w03", 1, 0) for i in range(3)]
    worlds = [t.world for t in run_order(trials, 0)]
    assert worlds[:3] != ["w01"] * 3 and set(worlds[:5]) == {"w01", "w02", "w03"}


def test_task_count_cycles_the_bank_with_new_seeds(bank):
    plan = plan_grid(spec_of(models=[{"model": "apiflow/oracle"}], epochs=1, tasks={"count": 30}), bank)
    assert len(plan) == 30 and len({t.trial_id for t in plan}) == 30
    assert len({t.seed for t in plan}) == 3  # 13 tasks: cycles 0, 1, 2


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_rate_gate_keeps_to_rpm_and_tpm():
    clock = Clock()
    gate = RateGate(rpm=60, tpm=6000, burst_s=1.0, clock=clock)
    sent = 0
    while clock.now < 160.0:  # one simulated minute of a greedy sender
        wait = gate.delay(50)
        if wait > 0:
            clock.now += wait
            continue
        gate.take(50)
        sent += 1
    assert 59 <= sent <= 61
    clock.now = 0.0
    gate = RateGate(rpm=6000, tpm=600, clock=clock)
    assert gate.delay(10) == 0 and (gate.take(10) or gate.delay(10) > 0)  # the token bucket binds


def test_rate_gate_pauses_everyone_on_429():
    clock = Clock()
    gate = RateGate(rpm=600, clock=clock)
    gate.pause(retry_after_s=5.0)
    assert gate.delay(0) == pytest.approx(5.0)
    clock.now += 5.0
    assert gate.delay(0) < 0.2
    assert gate.stats["rate_limited"] == 1


def test_ledger_admits_whole_trials_in_order_by_expected_cost():
    ledger = Ledger(cap_usd=1.0)
    asked = [(f"t{i}", 0, 0.3) for i in range(4)]
    assert ledger.admit(asked) == 3  # the fourth would commit 1.2: it and everything after wait
    assert not ledger.state.closed  # trials in flight may still make room
    for key in ("t0", "t1", "t2"):
        ledger.charge(key, 0.1)  # cheaper than expected ...
        ledger.finish(key, stored=True)
    assert ledger.ratio(0) < 1.0  # ... so the model's next trials are expected cheaper
    assert ledger.summary()["spent_usd"] == pytest.approx(0.3) and ledger.summary()["reserved_usd"] == 0
    assert ledger.admit(asked[3:]) == 1


def test_a_refusal_with_nothing_in_flight_closes_the_ledger():
    ledger = Ledger(cap_usd=1.0, spent_usd=0.9)  # a resumed grid starts from the spend on record
    assert ledger.admit([("a", 0, 0.2)]) == 0 and ledger.state.closed
    assert ledger.admit([("b", 0, 0.01)]) == 0  # closed for good: no cheaper trial jumps the order


def test_a_trial_once_admitted_is_billed_to_its_end_and_overshoot_is_reported():
    ledger = Ledger(cap_usd=1.0)
    assert ledger.admit([("a", 0, 0.5), ("b", 0, 0.4)]) == 2
    for _ in range(4):
        ledger.charge("a", 0.2)  # far dearer than expected: never refused mid-trial
    ledger.finish("a", stored=True)
    ledger.charge("b", 0.3)
    ledger.finish("b", stored=False)  # a provider fault: its spend stored nothing
    summary = ledger.summary()
    assert summary["spent_usd"] == pytest.approx(1.1) and summary["overshoot_usd"] == pytest.approx(0.1)
    assert summary["unstored_usd"] == pytest.approx(0.3)
    assert ledger.admit([("c", 0, 0.01)]) == 0 and ledger.state.closed


def test_planned_ids_are_trial_id_for_byte_for_byte(bank):
    """The planner's hand-joined JSON (cluster.plan.TrialIds) gives exactly the agent's ids, for every
    trial, including a non-ASCII slug, a knob digest in the route and cycled seeds."""
    from apiflow.agent import trial_id_for
    from apiflow.agent.ids import agent_version
    from apiflow.tools import tool_schema_hash
    from cluster.plan import model_route

    spec = spec_of(
        models=[{"model": "apiflow/oracle", "slug": "oracle-é/x:1"}, {"model": "apiflow/sim:weak", "temperature": 0.3}],
        tasks={"count": 20}, seed=12_345_678_901,
    )  # fmt: skip
    version, schema = agent_version(trial_limits(spec)), tool_schema_hash()
    plan = plan_grid(spec, bank)
    assert len(plan) == 80
    for t in plan:
        m = spec.models[t.model_index]
        expected = trial_id_for(
            bank.hash, t.task_id, m.slug, model_route(m), t.epoch, t.seed, version, schema
        )
        assert t.trial_id == expected


def test_the_live_line_speaks_of_the_grids_money_and_time():
    from cluster.progress import Tally

    tally = Tally(total=100, on_record_usd=2.0, cap_usd=10.0, began=0.0)
    tally.done, tally.spent_usd = 20, 1.0
    assert tally.grid_usd == pytest.approx(3.0)  # earlier attempts' spend counts
    assert tally.eta_s(now=60.0) == pytest.approx(240.0)  # 80 trials left at 20 a minute
    tally.ledger_usd = 9.0  # the ledger bills in-flight calls too: the money runs out first
    assert tally.eta_s(now=60.0) == pytest.approx(1.0 * 60.0 / 7.0)
    line = tally.describe()
    assert "$9.0000 on record of $10.00" in line and "ETA" in line


def test_a_run_that_counted_everything_but_reads_back_less_is_not_complete():
    from cluster.report import GridSummary
    from cluster.verify import Verdict

    summary = GridSummary(spec=spec_of(), planned=10, already_done=10)
    assert summary.complete
    summary.verdict = Verdict(planned=10, stored=7, missing=3)
    assert not summary.complete
    lines = summary.lines()
    assert lines[0].startswith("grid grid: 7/10 trials stored")
    assert any(line.startswith("SHORTFALL: the store holds 7 of 10") for line in lines)


def test_the_tier_is_not_part_of_the_trial_id(bank):
    spec = spec_of(models=[{"model": "anthropic/claude-sonnet-4-6"}])
    batched = spec_of(models=[{"model": "anthropic/claude-sonnet-4-6", "tier": "batch", "batching": {"size": 8}}])
    assert [t.trial_id for t in plan_grid(batched, bank)] == [t.trial_id for t in plan_grid(spec, bank)]


def test_the_summary_says_what_the_batch_tier_did():
    from cluster.report import GridSummary

    summary = GridSummary(spec=spec_of(), planned=10, already_done=0)
    assert not any("batch tier" in line for line in summary.lines())
    counts = {"batches": 3, "submitted": 40, "answered": 38, "from_journal": 5, "reattached": 2,
              "resubmitted": 1, "missed": 2}  # fmt: skip
    summary.workers = [{"batch_tier": counts}, {"batch_tier": {**counts, "batches": 1}}, {"batch_tier": {}}]
    line = next(line for line in summary.lines() if "batch tier" in line)
    assert "4 batches of 80 turns; 76 turns answered by a batch, 10 from the store's journal" in line
    assert "4 sent synchronously" in line
