"""Long in-process runs keep their loaded state out of the collector's walks."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from apiflow.agent import heap
from apiflow.cli import main


def test_settle_loaded_freezes_what_is_alive() -> None:
    loaded = [{"a": [1, 2]} for _ in range(1000)]  # stands in for a bank
    threshold = gc.get_threshold()
    gc.unfreeze()
    try:
        heap.settle_loaded()
        assert gc.get_freeze_count() >= len(loaded)
        assert gc.get_count()[0] < 100  # collected first: nothing young left behind
        assert gc.get_threshold()[0] == heap.YOUNG_COLLECTION_AFTER
    finally:  # this test's process is the suite's: give it back as it was
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_apiflow_run_settles_after_loading_only_in_its_own_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apiflow.cli import run as cli

    calls: list[int] = []
    monkeypatch.setattr(cli, "settle_loaded", lambda: calls.append(1))
    argv = ["run", "--model", "apiflow/oracle", "--task", "sample-w01-sub01", "--out", str(tmp_path)]
    assert main(argv, own_process=True) == 0  # the console script's process (apiflow.cli.entry)
    assert calls == [1]  # once per run, not per trial
    assert main(argv) == 0  # a caller's process (a notebook, this test): left alone
    assert calls == [1]


def test_a_pool_worker_preloads_then_settles_its_own_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from apiflow.runner import pool

    order: list[str] = []
    monkeypatch.setattr(pool, "settle_loaded", lambda: order.append("settle"))
    monkeypatch.setattr(pool, "_worker_replay", None)  # restored after: this process is no pool worker
    pool._start_worker(("apiflow/oracle",), lambda: order.append("preload"))
    assert order == ["preload", "settle"]


def test_the_panel_bank_loader_leaves_the_collector_alone() -> None:
    from apiflow.bank import DEFAULT_BANK
    from apiflow.panel import play

    before = (gc.get_threshold(), gc.get_freeze_count())
    play.bank_at.cache_clear()
    try:
        play.bank_at(str(DEFAULT_BANK))
    finally:
        play.bank_at.cache_clear()
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
