"""Long in-process runs keep their loaded state out of the collector's walks."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from apiflow.agent import heap
from apiflow.cli import main


def test_settle_loaded_freezes_what_is_alive() -> None:
    loaded = [{"a": [1, 2]} for _ in range(1000)]  # stands in for a bank
    gc.unfreeze()
    heap.settle_loaded()
    assert gc.get_freeze_count() >= len(loaded)
    assert gc.get_count()[0] < 100  # collected first: nothing young left behind
    assert gc.get_threshold()[0] == heap.YOUNG_COLLECTION_AFTER  # (tests/conftest.py restores it)


def test_apiflow_run_settles_after_loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from apiflow.cli import run as cli

    calls: list[int] = []
    monkeypatch.setattr(cli, "settle_loaded", lambda: calls.append(1))
    argv = ["run", "--model", "apiflow/oracle", "--task", "sample-w01-sub01", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert calls == [1]  # once per run, not per trial


def test_panel_bank_settles_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from apiflow.bank import DEFAULT_BANK
    from apiflow.panel import play

    calls: list[int] = []
    monkeypatch.setattr(play, "settle_loaded", lambda: calls.append(1))
    play.bank_at.cache_clear()
    try:
        play.bank_at(str(DEFAULT_BANK))
        play.bank_at(str(DEFAULT_BANK))
    finally:
        play.bank_at.cache_clear()
    assert calls == [1]
