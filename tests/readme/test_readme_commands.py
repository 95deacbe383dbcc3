"""Every command the README shows, run in a fresh copy of the tree with the venv active.

The commands are read from the README's bash blocks, so an edited or added line is tested (or the
table below must say why not). Each runs as written, in README order (later lines read what earlier
ones wrote), with the README's placeholders filled in (``PLACEHOLDERS``). Where a command is minutes
of compute, ``SCALED`` shrinks one flag and says so; where a command needs something this test cannot
give it (a package build, a cluster left running), ``ELSEWHERE`` names the test that runs it.
The table of what each did lands in ``readme-commands.json`` under the test's tmp folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from treekit import copy_tree

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

PLACEHOLDERS = {
    "PUBLISHED_DIR": "tests/data/transcripts",  # published trial JSON, <model>/<task>-t<N>.json
    "RESULTS": "results/demo",
    "REP": "rep/",
    "/tmp/": "scratch/",  # the README's throwaway folders, kept inside the test's own
}

SCALED = {
    "apiflow panel check": ("--jobs 2", "--jobs 2 --models claude-sonnet-4-6", "one model of 19"),
    "apiflow bank screen-eval": ("--seeds 1,2,3", "--seeds 1 --worlds 2 --epochs 1", "1 split of 2 worlds, 1 epoch"),
    "apiflow panel stability": ("--seeds 1,2,3,4,5 --epochs 5", "--seeds 1,2 --epochs 1 --worlds 3 --bootstrap 200", "2 splits of 3 worlds, 1 epoch"),
}
"""README command prefix -> (flag as written, flag run, what is left out)."""

SERVERS = {
    "apiflow world serve --task": "http://127.0.0.1:",
    "python -m apiflow.testing.standin_server": "http://127.0.0.1:",
}
"""Commands that serve until stopped: run until they print their address, then Ctrl-C (SIGINT)."""

ELSEWHERE = {
    "python3 -m venv .venv": ".ci/run runs the install and the test command; the demo grid after it runs here",
    "apiflow grid run GRID.yaml": "tests/cluster/test_grid_ray.py (S3 on moto, a running cluster)",
    "python bench/chaos.py": "tests/cluster/test_chaos_sizes.py and test_chaos_cleanup.py (the full bench: minutes)",
    "export RAY_AUTH_MODE": "tests/cluster/test_job_submit.py runs the README's job block",
    "ray ": "tests/cluster/test_job_submit.py runs the README's job block (never a machine-wide `ray stop`)",
    "pip install ./examples/apiflow-example-agent": "tests/plugins/test_example_plugin.py (pip into a throwaway folder)",
    "apiflow run --model example-agent/rules": "tests/plugins/test_example_plugin.py (needs the plug-in installed)",
    "pip install -e \".[realmodel]\"": "opt-in: builds llama.cpp from source (tests/realmodel)",
    "python bench/": "benchmarks measure, they do not check: run by hand, figures in docs/results/",
}
"""README command prefix -> where it is run instead."""


@dataclass
class Ran:
    command: str
    run_as: str
    code: int | None
    seconds: float
    note: str = ""


def readme_commands(text: str) -> list[str]:
    """Each command line of the README's bash blocks, comments dropped, ``[--opt x]`` spelled both ways."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = re.split(r"\s+#\s", line)[0].strip()
            if not line:
                continue
            optional = re.search(r"\s*\[(--.+?)\]", line)
            if optional:
                lines += [line.replace(optional.group(0), ""), line.replace(optional.group(0), " " + optional.group(1))]
            else:
                lines.append(line)
    return lines


def _fill(command: str) -> tuple[str, str]:
    run_as, note = command, ""
    for prefix, (written, scaled, left_out) in SCALED.items():
        if command.startswith(prefix):
            assert written in command, f"SCALED expects {written!r} in {command!r}"
            run_as, note = run_as.replace(written, scaled), f"scaled: {left_out}"
    for name, value in PLACEHOLDERS.items():
        run_as = run_as.replace(name, value)
    if command.startswith("python3 -m venv .venv"):  # the install is CI's; the demo grid after it runs here
        run_as, note = "apiflow" + run_as.split("&& .venv/bin/apiflow", 1)[1], "after the install"
    return run_as, note


def _elsewhere(command: str) -> str | None:
    if command.startswith("python3 -m venv .venv") and "grid run" in command:
        return None
    return next((why for prefix, why in ELSEWHERE.items() if command.startswith(prefix)), None)


def _serve(run_as: str, cwd: Path, env: dict[str, str], ready: str) -> tuple[int | None, str]:
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {run_as}"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    seen, deadline = "", time.monotonic() + 60
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while ready not in seen and proc.poll() is None and time.monotonic() < deadline:
        seen += (proc.stdout.read() or b"").decode(errors="replace")
        time.sleep(0.2)
    served = ready in seen
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
    return (0 if served and code in (0, 130, -signal.SIGINT) else code or 1), seen[-2000:]


def _run(run_as: str, cwd: Path, env: dict[str, str], timeout: float = 900) -> tuple[int, str]:
    """Exit code and output tail; the command's whole process group is killed if it overruns, so a
    pool worker it started never outlives the test."""
    proc = subprocess.Popen(
        ["bash", "-c", run_as], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        output = f"timed out after {timeout:g} s"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what it left running (its group), if anything
        proc.wait()
    return proc.returncode, output[-2000:]


def test_the_readme_table_covers_every_command() -> None:
    commands = readme_commands((ROOT / "README.md").read_text())
    assert len(commands) > 30
    for prefix in [*SCALED, *SERVERS, *ELSEWHERE]:
        assert any(c.startswith(prefix) for c in commands), f"table entry {prefix!r} matches no README command"


@pytest.mark.timeout(1800)
def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "clone"
    folder.mkdir()
    copy_tree(folder)
    (folder / "scratch").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "AWS_"))}
    env |= {"PATH": f"{VENV_BIN}:{env['PATH']}", "HOME": str(tmp_path / "home"), "RAY_USAGE_STATS_ENABLED": "0"}
    (tmp_path / "home").mkdir()
    ran: list[Ran] = []
    for command in readme_commands((ROOT / "README.md").read_text()):
        why = _elsewhere(command)
        if why is not None:
            ran.append(Ran(command, "", None, 0.0, f"elsewhere: {why}"))
            continue
        run_as, note = _fill(command)
        started = time.monotonic()
        ready = next((r for prefix, r in SERVERS.items() if command.startswith(prefix)), None)
        if ready is not None:
            code, output = _serve(run_as, folder, env, ready)
        else:
            code, output = _run(run_as, folder, env)
        ran.append(Ran(command, run_as, code, round(time.monotonic() - started, 1), note))
        if code != 0:
            ran[-1].note += f" | {output}"
        (tmp_path / "readme-commands.json").write_text(json.dumps([r.__dict__ for r in ran], indent=1))
    failed = [f"{r.command} -> {r.code}: {r.note}" for r in ran if r.code not in (0, None)]
    assert not failed, "\n\n".join(failed)
    pinned = "configs/panels/calibrated-original-19.json"  # "regenerates the pinned fit byte for byte"
    assert (folder / pinned).read_bytes() == (ROOT / pinned).read_bytes()
    assert sum(r.code == 0 for r in ran) >= 25
