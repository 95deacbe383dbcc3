"""The README's ``ray job submit`` lines, run as written against a real ``ray start --head``.

The commands come from the README itself (its fenced block that submits the driver), so a README
edit that breaks the path breaks this test. The head gets its own temp dir, ports and HOME (Ray
keeps its auth token under ``~/.ray``), runs from a copy of the tracked files, and is stopped by
killing exactly its own processes: the README's ``ray stop`` is machine-wide and is never run here.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from clusterkit import ROOT, children, free_port, kill_all, pids_mentioning
from treekit import copy_tree

from apiflow.errors import UsageError
from apiflow.results.store import ResultStore
from cluster.driver import JOB_ENV, check_job_out

VENV_BIN = Path(sys.executable).parent
AGENT_READY_S = 240.0
"""How long the head may take to bring up its job agent (a loaded 2-core machine is slow at it)."""


def readme_job_lines() -> list[str]:
    """The README's fenced bash block that runs ``ray job submit``, one command a line."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    (block,) = [b for b in blocks if "ray job submit" in b]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


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


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _clone(dest: Path) -> None:
    """The tracked files, plus what a user's clone also holds and the upload must leave out."""
    copy_tree(dest)
    for bulky in (".git/objects/pack/big.pack", "results/old/trials.bin", "report/big.html"):
        (dest / bulky).parent.mkdir(parents=True, exist_ok=True)
        (dest / bulky).write_bytes(os.urandom(8 << 20))


def test_the_readme_block_says_how_to_start_submit_and_stop() -> None:
    lines = readme_job_lines()
    assert [line.split()[0:2] for line in lines] == [
        ["export", "RAY_AUTH_MODE=token"], ["ray", "start"], ["ray", "job"], ["ray", "stop"],
    ]  # fmt: skip
    assert "--out" in lines[2] and "$PWD" in lines[2]


def test_the_upload_leaves_out_the_clones_outputs_and_git(tmp_path: Path) -> None:
    """What ``ray job submit --working-dir .`` would upload, zipped by Ray's own packaging code."""
    from ray._private.runtime_env.packaging import create_package

    clone = tmp_path / "clone"
    clone.mkdir()
    _clone(clone)
    package = tmp_path / "package.zip"
    create_package(str(clone), package, include_gitignore=True)
    with zipfile.ZipFile(package) as zf:
        names = zf.namelist()
    assert "cluster/driver.py" in names and "bank/v1/manifest.json" in names
    assert not [n for n in names if n.split("/")[0] in {".git", "results", "report", ".venv"}]


@pytest.mark.parametrize(
    ("out", "refused"),
    [("results/demo", True), ("/abs/results", False), ("s3://bucket/run", False)],
)
def test_a_relative_out_under_a_job_is_refused_with_the_fix(out: str, refused: bool) -> None:
    if refused:
        with pytest.raises(UsageError, match="absolute path"):
            check_job_out(out, {JOB_ENV: "{}"})
    else:
        check_job_out(out, {JOB_ENV: "{}"})
    check_job_out("results/demo", {})  # outside a job a relative folder is the user's own


@pytest.mark.cluster
@pytest.mark.slow
def test_the_readme_ray_job_submit_runs_the_demo_grid(tmp_path: Path) -> None:
    export, start, submit, _stop = readme_job_lines()
    clone, home = tmp_path / "clone", tmp_path / "home"
    clone.mkdir()
    home.mkdir()
    _clone(clone)
    # A token left by an earlier local Ray run: the case where a head turns auth on by itself.
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text(os.urandom(32).hex())
    name, value = export.removeprefix("export ").split("=", 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env |= {"HOME": str(home), "PATH": f"{VENV_BIN}:{env['PATH']}", "RAY_USAGE_STATS_ENABLED": "0", name: value}
    temp_dir = tempfile.mkdtemp(prefix="afj-", dir="/tmp")
    port, dashboard, agent = free_port(), free_port(), free_port()
    private = (
        f" --temp-dir={temp_dir} --port={port} --node-ip-address=127.0.0.1 --dashboard-port={dashboard}"
        f" --dashboard-agent-listen-port={agent} --ray-client-server-port={free_port()} --num-cpus=2"
    )
    try:
        subprocess.run(["bash", "-c", start + private], env=env, cwd=clone, check=True, capture_output=True, timeout=180)
        deadline = time.monotonic() + AGENT_READY_S
        while not _listening(agent) and time.monotonic() < deadline:
            time.sleep(1.0)
        # `ray job submit` reads the head's address from RAY_ADDRESS; the line itself runs as written.
        env["RAY_ADDRESS"] = f"http://127.0.0.1:{dashboard}"
        while True:
            job = subprocess.run(
                ["bash", "-c", submit], env=env, cwd=clone, capture_output=True, text=True, timeout=600
            )
            if "No available agent" not in job.stderr + job.stdout or time.monotonic() > deadline:
                break
            time.sleep(2.0)
    finally:
        _stop_head(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert "273/273 trials stored" in job.stdout
    store = ResultStore(str(clone / "results" / "demo"))  # "$PWD/results/demo": the submitting folder's
    assert len(store.done_ids()) == 273 and store.read_rows().num_rows == 273
