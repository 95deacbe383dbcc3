"""Issue 12 §6: the README's main command is quiet on stderr, and one-world intervals read "n/a".

The slow test runs the README's command as a user would (a subprocess, its own private local
Ray); its stderr is what a new user sees. Ray's temp dir is ours (``APIFLOW_RAY_TEMP_DIR``), so
whatever survives is killed by pid afterwards, never by name.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
from clusterkit import ROOT, kill_all, pids_mentioning

from apiflow.analysis.document import ONE_WORLD, band_text, pct_ci
from apiflow.cli import main

APIFLOW = str(Path(sys.executable).parent / "apiflow")
PUBLISHED = ROOT / "configs" / "panels" / "published-trials.parquet"


def test_band_text_says_n_a_for_one_world_and_keeps_real_ranges():
    assert band_text([0.5, 0.5], 1) == ONE_WORLD == "n/a (1 world)"
    assert band_text([0.25, 0.75], 3, scale=100) == "[25.0, 75.0]"
    assert band_text([None, None], 1) == ""  # no interval at all: nothing to qualify
    assert pct_ci({"rate": 0.5, "ci90": [0.5, 0.5], "worlds": 1}) == "50.0% n/a (1 world)"
    # a per-model entry carries no world count: it takes its slice's
    assert pct_ci({"rate": 0.5, "ci90": [0.4, 0.6]}, worlds=1) == "50.0% n/a (1 world)"
    assert pct_ci({"rate": 0.5, "ci90": [0.4, 0.6]}, worlds=4) == "50.0% [40.0, 60.0]"


def test_one_world_report_has_no_degenerate_range(tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main(["run", "--model", "apiflow/oracle", "--task", "all", "--out", str(runs)]) == 0
    assert main(["run", "--model", "apiflow/blank", "--task", "all", "--out", str(runs)]) == 0
    report = tmp_path / "report"
    assert main(["report", str(runs), "--out", str(report), "--bootstrap", "50"]) == 0
    terminal = capsys.readouterr().out
    board = (report / "leaderboard.md").read_text()
    assert json.loads((report / "summary.json").read_text())["meta"]["worlds"] == ["w01"]
    assert "100.0% n/a (1 world)" in board and "0.0% n/a (1 world)" in board
    assert "[100.0, 100.0]" not in board and "[0.0, 0.0]" not in board
    assert ONE_WORLD in terminal and "100.0–100.0" not in terminal


def test_many_world_report_keeps_its_intervals(tmp_path, capsys):
    report = tmp_path / "report"
    assert main(["report", str(PUBLISHED), "--out", str(report), "--bootstrap", "50"]) == 0
    board = (report / "leaderboard.md").read_text()
    assert ONE_WORLD not in board and "% [" in board


def test_a_large_spec_still_goes_inline():
    from cluster.driver import INLINE_ARG_BYTES, inline_spec
    from cluster.spec import GridSpec

    small = GridSpec(models=[{"model": "apiflow/oracle"}])
    assert inline_spec(small) == small.model_dump_json()
    ids = [f"sample-w01-sub{i:05d}" for i in range(20_000)]  # ~500 KiB of JSON
    large = GridSpec(models=[{"model": "apiflow/oracle"}], tasks={"ids": ids})
    packed = inline_spec(large)
    assert isinstance(packed, bytes) and len(packed) < INLINE_ARG_BYTES
    assert zlib.decompress(packed).decode() == large.model_dump_json()


@pytest.mark.slow
def test_readme_main_command_prints_no_ray_error(tmp_path):
    temp_dir = tempfile.mkdtemp(prefix="afp-", dir="/tmp")  # unix socket paths must stay short
    env = {**os.environ, "APIFLOW_RAY_TEMP_DIR": temp_dir, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    out = tmp_path / "demo"
    try:
        run = subprocess.run(
            [APIFLOW, "grid", "run", "configs/grids/demo.yaml", "--out", str(out), "--no-progress"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=400,
        )  # fmt: skip
    finally:
        kill_all(pids_mentioning(temp_dir))
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "273/273 trials stored" in run.stdout
    assert f"next: apiflow grid status {out} · apiflow report {out} · apiflow view {out}" in run.stdout
    assert "time: " not in run.stdout  # profiling figures only with --verbose
    noisy = [
        line for line in run.stderr.splitlines() if "core_worker" in line or "ERROR" in line or " E " in line
    ]
    assert not noisy, noisy
