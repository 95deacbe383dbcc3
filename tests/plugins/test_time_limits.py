"""Time limits that hold against a plug-in's own code (issue 26, class 9).

A plug-in's ``generate`` runs on a thread of its trial's own, so one that blocks synchronously (a
``time.sleep``, a busy loop, a blocked ``asyncio.to_thread``) still ends its trial at the time limit,
with a record, and the process, a pool worker or ``apiflow run`` goes on to the next trial and exits.
Whatever ``BaseException`` its own code raises is its outcome (scored ``no_answer``); a Ctrl-C of the
harness still stops ``apiflow run``, which then says what it stored.

Each block is bounded (``BLOCK_S``), so run against the code before the change these tests fail in
bounded time instead of hanging.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pluginkit import ROOT, on_path, write_dist

from apiflow.agent import TrialSpec
from apiflow.agent.loop import TrialLimits
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import make_model
from apiflow.results.record import Termination, TrialRecord
from apiflow.runner import play_trial_sync
from apiflow.runner.pool import in_worker, replay_pool

TASK, OTHER = "sample-w01-sub01", "sample-w01-sub02"
LIMIT_S = 0.5  # the trials' time limit
BLOCK_S = 8  # how long a blocking model blocks: far past the limit, yet bounded
WAIT_S = 60  # what a test waits for a trial or a process before calling it hung

# ``tl/<how>``: blocks (``sleep``, ``busy``, ``to-thread``), raises one ``BaseException``
# (``raise-<Class>``), plays the oracle (``oracle``), or plays the oracle on OTHER and sleeps on the
# rest (``sleep-but-other``).
SOURCE = f"""
    import asyncio
    import threading
    import time

    from apiflow.models.offline import oracle_model

    RELEASE = threading.Event()  # set by the tests: a busy loop still spinning stops
    RAISED = {{"KeyboardInterrupt": KeyboardInterrupt, "SystemExit": SystemExit,
              "CancelledError": asyncio.CancelledError, "GeneratorExit": GeneratorExit}}

    class Blocker:
        def __init__(self, name, task):
            self.model_api = name
            self.how = name.partition("/")[2]
            self.task_id = task.id
            self.oracle = oracle_model(task)

        async def generate(self, messages, tools, config):
            how = self.how
            if how == "sleep" or (how == "sleep-but-other" and self.task_id != {OTHER!r}):
                time.sleep({BLOCK_S})
            elif how == "busy":
                end = time.monotonic() + {BLOCK_S}
                while not RELEASE.is_set() and time.monotonic() < end:
                    pass
            elif how == "to-thread":
                await asyncio.to_thread(time.sleep, {BLOCK_S})
            elif how.startswith("raise-"):
                raise RAISED[how.removeprefix("raise-")]()
            return await self.oracle.generate(messages, tools, config)

        async def end_trial(self, messages):  # ``oracle-end<what>``: the hook misbehaves
            if self.how == "oracle-endraise":
                raise SystemExit(3)
            if self.how == "oracle-endforge":
                messages[1]["content"] = "forged"
                del messages[2:]
            if self.how == "oracle-endsleep":
                time.sleep({BLOCK_S})

    def make_model(name, task, seed, params):
        return Blocker(name, task)
"""


@pytest.fixture
def plugin(tmp_path: Path):
    """The ``tl`` plug-in installed for the test; its busy loops are released when the test ends."""
    site = tmp_path / "site"
    write_dist(site, "tlplug", "tlplug", SOURCE, {"tl": "tlplug:make_model"})
    with on_path(site):
        yield site
        module = sys.modules.get("tlplug")  # not imported here when only a pool worker played
        if module is not None:
            module.RELEASE.set()


def _play(name: str, task_id: str = TASK, max_seconds: float = LIMIT_S) -> TrialRecord:
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(task_id)
    spec = TrialSpec(task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                     bank_hash=bank.hash, run_id="r", model_slug="m",
                     limits=TrialLimits(max_seconds=max_seconds))  # fmt: skip
    return play_trial_sync(spec, make_model(name, task, 0))


def _agent_threads() -> int:
    return sum(t.name == "apiflow-agent" for t in threading.enumerate())


def _assert_cut_by_the_clock(record: TrialRecord) -> None:
    a = record.apiflow
    assert (a.termination, a.limit) == (Termination.LIMIT, "time")
    assert a.agent_error is not None and "did not return" in a.agent_error
    assert a.harness_error is None and record.verdict == "I"  # scored, as any trial out of time


@pytest.mark.parametrize("how", ["sleep", "busy", "to-thread"])
def test_a_blocking_plugin_ends_at_the_time_limit_and_the_next_trial_runs(plugin, how) -> None:
    started = time.monotonic()
    blocked = _play(f"tl/{how}")
    assert time.monotonic() - started < BLOCK_S  # the clock cut it, not the end of its block
    _assert_cut_by_the_clock(blocked)
    assert blocked.to_json()  # a whole record
    before = _agent_threads()
    after = _play("tl/oracle", max_seconds=WAIT_S)
    assert (after.apiflow.termination, after.verdict) == (Termination.ANSWERED, "C")
    deadline = time.monotonic() + WAIT_S  # the oracle's thread ends with its trial
    while _agent_threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _agent_threads() <= before


@pytest.mark.parametrize("raised", ["KeyboardInterrupt", "SystemExit", "CancelledError", "GeneratorExit"])
def test_a_base_exception_from_the_plugin_is_its_scored_outcome(plugin, raised) -> None:
    record = _play(f"tl/raise-{raised}", max_seconds=WAIT_S)
    a = record.apiflow
    assert a.termination == Termination.NO_ANSWER and record.verdict == "I"
    assert a.agent_error is not None and f"raised {raised}" in a.agent_error and a.harness_error is None


def _play_in_worker(names: list[str], replay: object) -> list[tuple[str, str | None, str | None]]:
    """Runs in the pool's worker: each trial's termination, limit and agent error."""
    return [
        (r.apiflow.termination.value, r.apiflow.limit, r.apiflow.agent_error)
        for r in (_play(name, max_seconds=LIMIT_S if name != "tl/oracle" else WAIT_S) for name in names)
    ]


def test_a_pool_worker_survives_a_blocking_plugin(plugin) -> None:
    pool = replay_pool(1, ["tl/sleep"])
    done = False
    try:
        first = pool.submit(in_worker, _play_in_worker, ["tl/sleep", "tl/oracle"]).result(timeout=WAIT_S)
        again = pool.submit(in_worker, _play_in_worker, ["tl/oracle"]).result(timeout=WAIT_S)
        done = True
    finally:
        if not done:  # a worker stuck in the plug-in would hold the pool's shutdown forever
            for process in list(pool._processes.values()):
                process.kill()
        pool.shutdown(wait=done, cancel_futures=True)
    (termination, limit, error), oracle = first
    assert (termination, limit) == ("limit", "time") and error and "did not return" in error
    assert oracle == again[0] == ("answered", None, None)


def _cli(model: str, out: Path, *tasks: str, max_seconds: float) -> list[str]:
    return [sys.executable, "-m", "apiflow.cli", "run", "--model", model, "--task", *tasks, "--out", str(out),
            "--max-seconds", str(max_seconds)]  # fmt: skip


def _env(site: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


@pytest.mark.parametrize("how", ["sleep", "to-thread"])
def test_apiflow_run_records_a_blocked_trial_and_exits(plugin, tmp_path, how) -> None:
    out = tmp_path / "out"
    run = subprocess.run(
        _cli(f"tl/{how}", out, TASK, max_seconds=LIMIT_S),
        cwd=ROOT, env=_env(plugin), capture_output=True, text=True, timeout=WAIT_S,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    (path,) = out.rglob(f"{TASK}-t1.json")
    record = json.loads(path.read_text())
    assert (record["apiflow"]["termination"], record["apiflow"]["limit"]) == ("limit", "time")
    assert "did not return" in record["apiflow"]["agent_error"]


def test_ctrl_c_stops_apiflow_run_and_says_what_is_stored(plugin, tmp_path) -> None:
    out = tmp_path / "out"
    process = subprocess.Popen(
        _cli("tl/sleep-but-other", out, OTHER, TASK, max_seconds=WAIT_S),
        cwd=ROOT, env=_env(plugin), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # the first trial is written; the second blocks in the plug-in
        assert first.startswith(f"{OTHER}-t1 "), first + process.stderr.read() if process.stderr else first
        process.send_signal(signal.SIGINT)
        rest, errors = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, rest + errors
    assert f"INTERRUPTED: 1 of 2 trials stored in {out}" in rest and "nothing is lost" in rest
    assert f"--task {TASK}" in rest
    stored = [p.name for p in out.rglob("*-t1.json")]
    assert stored == [f"{OTHER}-t1.json"]


@pytest.mark.parametrize("how", ["endraise", "endforge", "endsleep"])
def test_a_plugins_end_trial_hook_cannot_unscore_rewrite_or_hold_its_trial(plugin, how, monkeypatch) -> None:
    from apiflow.models import plugins

    monkeypatch.setattr(plugins, "END_TRIAL_S", LIMIT_S)
    honest = _play("tl/oracle", max_seconds=WAIT_S)
    started = time.monotonic()
    record = _play(f"tl/oracle-{how}", max_seconds=WAIT_S)
    assert time.monotonic() - started < BLOCK_S  # a hook that blocks is cut, not waited for
    a = record.apiflow
    assert (a.termination, record.verdict, a.harness_error) == (Termination.ANSWERED, "C", None)
    assert json.loads(record.to_json())["messages"] == json.loads(honest.to_json())["messages"]
