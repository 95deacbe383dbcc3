"""The dispatcher's re-queue after an actor death, against a fake Ray (no cluster): a batch
object the dead actor created means its trials are stored; none means none is."""

from __future__ import annotations

import json

import pytest
from ray.exceptions import RayActorError

from apiflow.agent import TrialSpec, trial_seed
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import make_model
from apiflow.results import archives
from apiflow.results.rows import record_to_row
from apiflow.results.source import open_source
from apiflow.results.store import ResultStore
from apiflow.runner import play_trial_sync
from cluster.dispatch import Dispatcher
from cluster.plan import PlannedTrial
from cluster.spec import GridSpec
from cluster.workqueue import WorkQueue

LOST = (RayActorError,)

class _Ref:
    pass


class _Method:
    def __init__(self, calls: list) -> None:
        self.calls = calls

    def remote(self, *args):
        self.calls.append(args)
        return _Ref()


class _Actor:
    def __init__(self) -> None:
        self.calls: list = []
        self.run_batch = _Method(self.calls)
        self.ping = _Method([])


class _DeadRay:
    """Every call's result is an actor death; pings never come back."""

    def wait(self, refs, num_returns, timeout):
        return list(refs), []

    def get(self, ref):
        raise RayActorError()


def _spec(out: str) -> GridSpec:
    return GridSpec.model_validate({"name": "t", "models": [{"model": "apiflow/oracle"}], "out": out,
                                    "concurrency": {"batch": 3}})  # fmt: skip


def _record(planned: PlannedTrial):
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(planned.task_id)
    model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
    record = play_trial_sync(
        TrialSpec(
            task=task, world=bank.world_of(task), seed=0, epoch=1, run_id="r", bank_name=bank.name,
            bank_hash=bank.hash, model_slug="apiflow-oracle",
        ),
        model,
    )
    record.apiflow.trial_id = planned.trial_id
    return record


@pytest.mark.parametrize("committed", [True, False])
def test_a_dead_actors_batch_is_requeued_only_if_not_committed(tmp_path, committed):
    spec = _spec(str(tmp_path / "out"))
    trials = [PlannedTrial(f"{i:032x}", 0, "sample-w01-sub01", "w01", 1, 0) for i in range(3)]
    store = ResultStore(spec.out)
    if committed:  # the actor had created the batch object, then died before answering
        records = [_record(t) for t in trials]
        assert store.put_batch([t.trial_id for t in trials], [(r, record_to_row(r)) for r in records])
    dispatcher = Dispatcher(_DeadRay(), [_Actor()], spec, calls_per_actor=2, window=4, store=store, actor_lost=LOST)
    queue = WorkQueue(trials, 1)
    assert dispatcher.submit(queue) and not queue
    outcomes, requeued = dispatcher.collect(queue)
    if committed:
        assert requeued == 0 and not queue
        assert [o.termination for o in outcomes] == ["already_stored"] * 3 and not any(
            o.stored for o in outcomes
        )
    else:
        assert requeued == 3 and list(queue) == trials and outcomes == []


def test_a_runner_killed_mid_batch_resumes_to_every_trial_once(tmp_path, monkeypatch):
    """In process (the actors' TrialRunner): the third batch object never gets written (the process
    'dies' there); resume = planned - listed runs the rest; every trial ends stored exactly once,
    the transcripts of the lost batch (its uncommitted archive) rewritten alike (wall-time fields aside)."""
    import asyncio

    from cluster.driver import absolute_paths
    from cluster.plan import plan_grid, remaining
    from cluster.worker import TrialRunner, load_checked_bank

    spec = absolute_paths(
        GridSpec.model_validate(
            {
                "name": "t",
                "models": [{"model": "apiflow/oracle"}, {"model": "apiflow/sim:weak"}],
                "out": str(tmp_path / "out"),
                "concurrency": {"batch": 5},
            }
        )  # fmt: skip
    )
    plan = plan_grid(spec, load_checked_bank(spec))
    runner = TrialRunner(spec, "r")
    real, calls = runner.store.create_only, []

    def dies_on_the_third(path, data):
        calls.append(path)
        if len(calls) == 3:
            raise SystemExit("killed mid-batch")
        return real(path, data)

    monkeypatch.setattr(runner.store, "create_only", dies_on_the_third)
    with pytest.raises(SystemExit):
        asyncio.run(runner.run_batch(plan))
    assert len(runner.store.done_ids()) == 10  # two batches of five committed, the third lost whole
    lost = plan[10:15]
    # Its transcripts were written (one archive) but never committed: the store does not read them.
    archive = runner.store.objects.cat(runner.store.archive_path([p.trial_id for p in lost]))
    before = {archives.trial_id_of(name): json.loads(body) for name, body in archives.read_members(archive)}
    assert sorted(before) == sorted(p.trial_id for p in lost)
    with pytest.raises(FileNotFoundError):
        runner.store.read_transcript(spec.models[lost[0].model_index].slug, lost[0].trial_id)
    monkeypatch.setattr(runner.store, "create_only", real)
    todo = remaining(plan, runner.store.done_ids())
    assert todo == plan[10:]
    outcomes = asyncio.run(runner.run_batch(todo))
    assert all(o.stored for o in outcomes)
    assert sorted(runner.store.row_ids()) == sorted(p.trial_id for p in plan)  # none lost, none twice
    runner.store.write_manifest({"grid_id": "t"})  # the driver writes it; the viewer knows a grid by it
    shown = [path.rsplit("/", 1)[-1].removesuffix(".json") for path in open_source(spec.out).paths]
    assert sorted(shown) == sorted(p.trial_id for p in plan)  # every row's transcript, each once
    for trial_id, old in before.items():
        new = runner.store.read_transcript(old["model"], trial_id)
        assert {**new, "duration_s": 0, "provenance": None} == {**old, "duration_s": 0, "provenance": None}


def _provider_spec(out: str, ramp_s: float) -> GridSpec:
    return GridSpec.model_validate({"name": "t", "out": out, "models": [{"model": "openai/gpt-4o-mini"}],
                                    "concurrency": {"trials_per_actor": 4, "ramp_s": ramp_s}})  # fmt: skip


def _provider_trials(n: int, actors: int = 2) -> WorkQueue:
    return WorkQueue((PlannedTrial(f"{i:032x}", 0, "sample-w01-sub01", "w01", 1, i) for i in range(n)), actors)


def test_a_ramp_spreads_the_first_wave_of_provider_starts(tmp_path, monkeypatch):
    """ramp_s = 8 over 2 actors x 4 slots: the n-th start waits until n s have passed; the first
    wave over, starts go out as slots free (nothing left to wait for)."""
    import cluster.dispatch as dispatch

    now = [100.0]
    monkeypatch.setattr(dispatch.time, "monotonic", lambda: now[0])
    actors = [_Actor(), _Actor()]
    dispatcher = Dispatcher(_DeadRay(), actors, _provider_spec(str(tmp_path), 8.0), 4, window=16, actor_lost=LOST)
    queue = _provider_trials(12)
    started = []
    for _ in range(9):
        while dispatcher.submit(queue):
            pass
        started.append(12 - len(queue))
        if started[-1] < 8:
            assert dispatcher.ramp_wait_s(queue) == pytest.approx(started[-1] - (now[0] - 100.0))
        now[0] += 1.0
    assert started == [1, 2, 3, 4, 5, 6, 7, 8, 8]  # one a second; then every slot is held
    assert dispatcher.ramp_wait_s(queue) == 0.0
    dispatcher.per_actor = [3, 4]  # a trial of the first actor finished: its slot refills at once
    assert dispatcher.submit(queue) and len(queue) == 3


def test_no_ramp_starts_every_slot_at_once(tmp_path):
    dispatcher = Dispatcher(
        _DeadRay(), [_Actor(), _Actor()], _provider_spec(str(tmp_path), 0.0), 4, window=16, actor_lost=LOST
    )
    queue = _provider_trials(12)
    while dispatcher.submit(queue):
        pass
    assert len(queue) == 4 and dispatcher.ramp_wait_s(queue) == 0.0


def test_offline_batches_ignore_the_ramp(tmp_path):
    spec = GridSpec.model_validate({"name": "t", "models": [{"model": "apiflow/oracle"}], "out": str(tmp_path),
                                    "concurrency": {"batch": 3, "ramp_s": 1000.0}})  # fmt: skip
    dispatcher = Dispatcher(_DeadRay(), [_Actor()], spec, calls_per_actor=2, window=4, actor_lost=LOST)
    queue = WorkQueue((PlannedTrial(f"{i:032x}", 0, "sample-w01-sub01", "w01", 1, 0) for i in range(6)), 1)
    assert dispatcher.submit(queue) and dispatcher.submit(queue) and not queue
