"""The chaos suite (bench/chaos.py), small: a crash anywhere loses nothing.

A real two-node local Ray cluster (own temp dirs, ports and auth token; stopped by its own pids),
a moto S3 server subprocess and the stand-in provider subprocess; litellm calls the stand-in over
HTTP. One driver SIGKILL (rerun), one worker actor SIGKILL, node 2's raylet SIGKILL, S3 frozen
3 s, 10 % provider faults; then every check of the full suite must pass: lost 0, duplicates 0,
each trial's result equal to the clean run's, every injected fault recorded, budget held across
a driver kill. The reference (clean) and the fault-accounting runs use the same runner without
Ray, which keeps the test near 90 s; ``bench/chaos.py`` runs all of it on the cluster at 5,000 trials.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from clusterkit import ROOT

from cluster.chaos.kit import MARKER, alive, cluster_tag, with_env
from cluster.chaos.sizes import Suite
from cluster.chaos.suite import run

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.s3]


def test_chaos_suite_small_loses_nothing(tmp_path):
    if shutil.which("moto_server", path=str(ROOT / ".venv/bin")) is None:
        pytest.fail("moto_server is missing: install the dev extra (moto[server])")
    suite = Suite(
        trials=90, faults_trials=45, budget_rerun=False, budget_fraction=0.6, driver_kills=1, budget_kills=1, s3_pause_s=3.0, hang_s=2.0,
        call_timeout_s=1.5, actors=2, trials_per_actor=8, deadline_s=600.0, inproc=("clean", "faults"),
        work=tmp_path,
    )  # fmt: skip
    lines, ok = run(suite, ["clean", "faults", "chaos", "budget"])
    report = "\n".join(lines)
    print(report)
    checks = [line for line in lines if line.startswith("[")]
    assert len(checks) >= 20, report  # every scenario reached its checks
    assert ok, report
    tag = cluster_tag()  # nothing of the cluster outlives the run (tests/cluster/test_chaos_cleanup.py)
    assert alive(with_env(f"{MARKER}={tag}")) == [] and not list(Path("/tmp").glob(f"{Path(tag).name}-*"))
