"""The workers' CPU split (trial vs store vs the rest) that the summary and bench_grid report."""

from __future__ import annotations

import asyncio
from pathlib import Path

from apiflow.bank import DEFAULT_BANK
from cluster.driver import absolute_paths
from cluster.plan import plan_grid
from cluster.report import GridSummary
from cluster.spec import GridSpec
from cluster.worker import TrialRunner, load_checked_bank

ROOT = Path(__file__).resolve().parents[2]


def _spec(out: Path) -> GridSpec:
    return absolute_paths(GridSpec.model_validate({
        "name": "t", "bank": str(DEFAULT_BANK), "models": [{"model": "apiflow/oracle"}, {"model": "apiflow/sim:weak"}],
        "out": str(out), "price_table": str(ROOT / "configs/prices/2026-12.yaml"), "concurrency": {"batch": 5},
    }))  # fmt: skip


def test_a_runner_counts_the_cpu_of_its_batches(tmp_path: Path) -> None:
    spec = _spec(tmp_path / "out")
    plan = plan_grid(spec, load_checked_bank(spec))[:13]
    runner = TrialRunner(spec, "r")
    outcomes = asyncio.run(runner.run_batch(plan[:12]))
    assert all(o.stored for o in outcomes)
    # 12 offline trials in batches of 5: 5 + 5 + 2, all counted; a lone trial (run_one) is not
    assert runner.cpu.trials == 12 and runner.cpu.play_s > 0 and runner.cpu.store_s > 0
    alone = asyncio.run(runner.run_batch(plan[12:]))  # one trial: the per-trial path, uncounted
    assert runner.cpu.trials == 12 and alone[0].stored


def test_the_summary_prints_the_split_per_trial() -> None:
    summary = GridSummary(spec=_spec(Path("/nonexistent")), planned=4, already_done=0, driver_cpu_s=2.0,
                          driver_trial_cpu_s=0.2)  # fmt: skip
    summary.tally.done = 4
    summary.workers = [
        {"trials": 2, "play_cpu_s": 0.010, "store_cpu_s": 0.002, "cpu_since_init_s": 0.013, "init_cpu_s": 0.4,
         "peak_rss_mb": 200.0},
        {"trials": 2, "play_cpu_s": 0.010, "store_cpu_s": 0.002, "cpu_since_init_s": 0.013, "init_cpu_s": 0.5,
         "peak_rss_mb": 210.0},
    ]  # fmt: skip
    lines = summary.lines(verbose=True)
    assert (
        "  workers: 2 actors, 4 offline trials in batches; CPU per trial 6.500 ms = trial 5.000 + store 1.000"
        " + rest 0.500 (Ray, dispatch, serialisation); start-up 0.40/0.50 s CPU; peak RSS 200/210 MB"
    ) in lines
    assert "  driver CPU 2.0 s, of which the trial phase 0.20 s (50.000 ms per trial run)" in lines
    summary.workers[0]["transitions"] = {"hits": 30, "misses": 10, "edges": 10, "roots": 2}
    summary.workers[1]["transitions"] = {"hits": 10, "misses": 30, "edges": 1000, "roots": 4}
    assert any(
        line.endswith("peak RSS 200/210 MB; world answers replayed 50.0% of 80 (edges held 10/1,000)")
        for line in summary.lines(verbose=True)
    )
    summary.workers[0]["grades"] = {"hits": 3, "misses": 1, "entries": 1}
    summary.workers[1]["grades"] = {"hits": 0, "misses": 4, "entries": 4}
    assert any(line.endswith("(edges held 10/1,000); grades replayed 37.5% of 8") for line in summary.lines(verbose=True))
    for worker, seconds in zip(summary.workers, (0.001, 0.003), strict=True):
        worker.update(gc_s=[seconds, 0.0, 0.0], gc_count=[5, 0, 1], gc_longest_s=seconds)
    assert any(
        line.endswith("grades replayed 37.5% of 8; collector 1.000 ms a trial (2 full, longest 3 ms)")
        for line in summary.lines(verbose=True)
    )
    summary.workers = []
    assert not any("workers:" in line for line in summary.lines(verbose=True))


def test_gc_pauses_count_each_collection_by_generation() -> None:
    import gc

    from cluster.worker import GcPauses

    pauses = GcPauses()
    try:
        gc.collect(1)
        gc.collect()
        assert pauses.count[1] == 1 and pauses.count[2] == 1
        assert pauses.seconds[2] > 0 and pauses.longest_s >= pauses.seconds[2]
    finally:
        gc.callbacks.remove(pauses._observe)


def test_settling_the_heap_freezes_what_exists_and_loads_litellm_first(tmp_path: Path) -> None:
    import gc
    import sys

    from apiflow.agent.heap import YOUNG_COLLECTION_AFTER
    from cluster.worker import FULL_COLLECTION_EVERY, settle_heap

    spec = GridSpec.model_validate(
        {"name": "t", "models": [{"model": "openai/gpt-4o-mini"}], "out": str(tmp_path)}
    )
    threshold = gc.get_threshold()
    try:
        settle_heap(spec)
        assert "litellm" in sys.modules and gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_COLLECTION_AFTER, threshold[1], FULL_COLLECTION_EVERY)
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_thread_cpu_splits_the_process_by_thread() -> None:
    import threading
    import time

    from cluster.worker import thread_cpu_s

    spun, release = threading.Event(), threading.Event()

    def spin() -> None:  # a second live thread that has used a known share of CPU
        while time.thread_time() < 0.2:
            pass
        spun.set()
        release.wait()

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        spun.wait()
        spent = thread_cpu_s(thread.native_id)
        assert "main" in spent
        assert spent["event loop"] >= 0.15  # the thread named as the loop; clock ticks of 10 ms
    finally:
        release.set()
        thread.join()


def test_the_trial_actor_sends_no_task_events() -> None:
    from cluster.actors import TrialWorker

    # one state-change event per method call otherwise, shipped from a core-worker thread
    assert TrialWorker._default_options["enable_task_events"] is False  # type: ignore[attr-defined]
