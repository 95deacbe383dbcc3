"""The chaos suite leaves nothing behind: no process it started, no temp folder it made.

Its Ray processes are found the way the suite finds them (our marker in their environment, a temp dir
on their command line; the head's Ray client server names no temp dir and is left to init by
``ray start``); moto, the stand-in and the drivers as descendants of this process. Checked after a
passing run and after a run interrupted (SIGTERM) mid-scenario with a raylet killed and its
replacement still pending.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest
from clusterkit import ROOT, children, cmdline

from cluster.chaos.kit import MARKER, alive, cluster_tag, with_env
from cluster.chaos.scenarios import Chaos
from cluster.chaos.sizes import Suite
from cluster.chaos.suite import Interrupted, interruptible, run

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.s3]

TINY = {
    "trials": 6,
    "actors": 1,
    "trials_per_actor": 4,
    "deadline_s": 300.0,
    "hang_s": 1.0,
    "call_timeout_s": 1.5,
}


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """Temp folders the suite and every process it starts make go under ``tmp_path/tmp`` (``TMPDIR``), where
    they can be counted (Ray's own temp dirs are ``/tmp/rc-<pid>-*``, checked by ``leftovers``)."""
    if shutil.which("moto_server", path=str(ROOT / ".venv/bin")) is None:
        pytest.fail("moto_server is missing: install the dev extra (moto[server])")
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def leftovers(before: set[int]) -> list[str]:
    """What of the suite still runs or lies on disk."""
    tag = cluster_tag()
    found = alive(with_env(f"{MARKER}={tag}") + [p for p in _pids() if tag in cmdline(p)])
    found += [p for p in alive(children(os.getpid())) if p not in before]  # moto, stand-in, drivers
    dirs = [str(p) for p in Path("/tmp").glob(f"{Path(tag).name}-*")]
    return [f"{pid}: {cmdline(pid)[:120]}" for pid in sorted(set(found))] + dirs


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]


def test_a_passing_run_leaves_nothing(own_tmp):
    before = set(children(os.getpid()))
    lines, ok = run(Suite(**TINY), ["clean"])  # on the cluster: a driver, its actors, the client server
    assert ok, "\n".join(lines)
    assert leftovers(before) == []
    assert list(own_tmp.iterdir()) == []  # its temp work folder is gone after a pass, nothing else left


def test_an_interrupted_run_leaves_nothing_but_its_logs(own_tmp, monkeypatch, capsys):
    before = set(children(os.getpid()))

    def interrupted(self: Chaos) -> None:
        grid = self.grid("clean", "http://127.0.0.1:9/v1", self.s.trials)
        self.driver(grid, "doomed")
        self.cluster.kill_raylet(self.cluster.node)
        self.cluster.replace_node_later(2.0)  # due after the interruption: it must never start
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the signal's exception lands here

    monkeypatch.setattr(Chaos, "scenario_clean", interrupted)
    with pytest.raises(Interrupted), interruptible():
        run(Suite(**TINY), ["clean"])
    assert leftovers(before) == []
    time.sleep(4)  # past the replacement's due time
    assert leftovers(before) == []
    kept = list(own_tmp.iterdir())
    assert len(kept) == 1 and (kept[0] / "doomed.log").exists()  # a failed run keeps its logs ...
    assert f"kept in {kept[0]}" in capsys.readouterr().err  # ... and says where
