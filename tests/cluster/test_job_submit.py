"""``ray job submit`` runs the demo grid against a real Ray head started by this test.

The head gets its own temp dir and ports; it is stopped by killing exactly its own processes
(never a machine-wide ``ray stop``: other people's Ray may be running here).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from clusterkit import ROOT, children, free_port, kill_all, pids_mentioning

from apiflow.results.store import ResultStore

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

VENV_BIN = Path(sys.executable).parent
EXCLUDES = [
    ".venv",
    ".git",
    "results",
    "out",
    "runs",
    "**/__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
]


def _stop_head(temp_dir: str) -> None:
    daemons = pids_mentioning(temp_dir)
    ours = daemons + [c for pid in daemons for c in children(pid)]
    for pid in ours:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    time.sleep(1.0)
    kill_all(ours + pids_mentioning(temp_dir))


def test_ray_job_submit_runs_the_demo_grid(tmp_path):
    temp_dir = tempfile.mkdtemp(prefix="afj-", dir="/tmp")
    port, dashboard = free_port(), free_port()
    # The entrypoint runs in the environment of whoever ran `ray start`: the venv must be on PATH.
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": os.urandom(16).hex(),
    }  # our own head, our own token
    env.pop("RAY_ADDRESS", None)
    out = tmp_path / "demo"
    try:
        subprocess.run(
            [str(VENV_BIN / "ray"), "start", "--head", f"--temp-dir={temp_dir}", f"--port={port}", "--node-ip-address=127.0.0.1",
             f"--dashboard-port={dashboard}", "--dashboard-host=127.0.0.1", "--num-cpus=2",
             f"--ray-client-server-port={free_port()}", "--disable-usage-stats"],
            env=env, check=True, capture_output=True, timeout=180,
        )  # fmt: skip
        # `ray start` returns before the dashboard's job agent is up; until it is, a submission is
        # refused ("No available agent to submit job, please try again later"), nothing submitted.
        deadline = time.monotonic() + 60
        while True:
            job = subprocess.run(
                [str(VENV_BIN / "ray"), "job", "submit", f"--address=http://127.0.0.1:{dashboard}", "--working-dir", ".",
                 "--runtime-env-json", json.dumps({"excludes": EXCLUDES}), "--",
                 "python", "-m", "cluster.driver", "configs/grids/demo.yaml", "--out", str(out), "--no-progress"],
                env=env, cwd=ROOT, capture_output=True, text=True, timeout=400,
            )  # fmt: skip
            if "No available agent to submit job" not in job.stderr or time.monotonic() > deadline:
                break
            time.sleep(2.0)
    finally:
        _stop_head(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "273/273 trials stored" in job.stdout
    store = ResultStore(str(out))
    assert len(store.done_ids()) == 273 and store.read_rows().num_rows == 273
