"""The example plug-in, installed with pip the way a user would, run by ``apiflow run`` and in a grid
on a real Ray head.

pip installs it into a ``--target`` folder under the test's tmp dir (never into the shared venv);
the CLI, the driver and the head's workers see it through ``PYTHONPATH``, the way a real
cluster sees a plug-in installed on every node. The head has its own temp dir and ports and is
stopped by its own pids.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from clusterkit import ROOT, free_port
from pluginkit import EXAMPLE
from test_job_submit import VENV_BIN, _stop_head

import apiflow

pytestmark = pytest.mark.slow

AGENT = "example-agent/rules"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example installed by pip into a throwaway folder (built from a copy: the tree stays clean)."""
    source = tmp_path_factory.mktemp("src") / EXAMPLE.name
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    target = tmp_path_factory.mktemp("site")
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
         "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    assert (target / "apiflow_example_agent").is_dir()
    return target


def _env(site: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(site), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    return env


def test_apiflow_run_plays_the_installed_plugin(site, tmp_path):
    out = tmp_path / "out"
    run = subprocess.run(
        [str(VENV_BIN / "apiflow"), "run", "--model", AGENT, "--task", "sample-w01-sub01", "sample-w01-sub02",
         "--out", str(out)],
        cwd=ROOT, env=_env(site), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    solved = json.loads((out / "example-agent-rules" / "sample-w01-sub01-t1.json").read_text())
    assert (
        solved["verdict"] == "C" and solved["model_api"] == AGENT and solved["model"] == "example-agent-rules"
    )
    assert solved["apiflow"]["cost_usd"] == 0.0 and solved["apiflow"]["termination"] == "answered"
    unsolved = json.loads((out / "example-agent-rules" / "sample-w01-sub02-t1.json").read_text())
    assert unsolved["verdict"] == "I" and unsolved["apiflow"]["harness_error"] is None  # a model failure
    # Not installed where the test did not put it: the shared venv knows no such model.
    bare = subprocess.run(
        [str(VENV_BIN / "apiflow"), "run", "--model", AGENT, "--task", "sample-w01-sub01", "--out", str(out)],
        cwd=ROOT, env={k: v for k, v in _env(site).items() if k != "PYTHONPATH"}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert bare.returncode == 2 and "Traceback" not in bare.stderr


@pytest.mark.cluster
def test_a_grid_on_a_real_ray_head_runs_the_plugin(site, tmp_path, monkeypatch):
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "name: plugin-grid\nbank: bank/sample\nmodels:\n  - model: example-agent/rules\n  - model: apiflow/oracle\n"
        "tasks:\n  ids: [sample-w01-sub01, sample-w01-sub02]\nepochs: 2\n"
        f"price_table: {ROOT / 'configs/prices/2026-12.yaml'}\n"
    )
    temp_dir = tempfile.mkdtemp(prefix="afg-", dir="/tmp")  # unix socket paths must stay short
    port = free_port()
    env = {
        **_env(site),
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": os.urandom(16).hex(),
    }  # our head, our token
    for key, value in env.items():
        monkeypatch.setenv(key, value)  # the driver run_grid starts inherits PYTHONPATH too
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    try:
        # The head's workers inherit the environment of `ray start`: that is how they import the plug-in.
        subprocess.run(
            [str(VENV_BIN / "ray"), "start", "--head", f"--temp-dir={temp_dir}", f"--port={port}",
             "--node-ip-address=127.0.0.1", "--num-cpus=2", "--include-dashboard=false",
             f"--ray-client-server-port={free_port()}", "--disable-usage-stats"],
            env=env, check=True, capture_output=True, timeout=180,
        )  # fmt: skip
        rows = apiflow.run_grid(grid, out=str(tmp_path / "out"), address=f"127.0.0.1:{port}", timeout_s=400)
    finally:
        _stop_head(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
    by_model: dict[str, list[dict]] = {}
    for row in rows.to_pylist():
        by_model.setdefault(row["model"], []).append(row)
    assert sorted(by_model) == ["apiflow-oracle", "example-agent-rules"] and rows.num_rows == 8
    plugin = sorted(by_model["example-agent-rules"], key=lambda r: (r["task_id"], r["trial"]))
    assert [(r["task_id"], r["verdict"]) for r in plugin] == [
        ("sample-w01-sub01", "C"), ("sample-w01-sub01", "C"), ("sample-w01-sub02", "I"), ("sample-w01-sub02", "I"),
    ]  # fmt: skip
    assert all(r["model_api"] == AGENT and not r["harness"] and r["cost_usd"] == 0.0 for r in plugin)
    assert all(r["verdict"] == "C" for r in by_model["apiflow-oracle"])
