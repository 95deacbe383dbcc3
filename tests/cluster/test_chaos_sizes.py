"""The chaos suite's sizes are coherent at the command the README documents (no Ray, no S3).

Every scenario is compared with the clean run, so each one's trials must be the clean grid's (or its
first part): a faults scenario larger than the grid (once 1,000 trials against a 300-trial reference)
cannot pass whatever the code does.
"""

from __future__ import annotations

import shlex

import pytest
import yaml
from clusterkit import ROOT

from cluster.chaos.cli import command
from cluster.chaos.sizes import FAULTS_TRIALS, Suite, grid_data


def readme_argv() -> list[str]:
    """The flags of the README's ``python bench/chaos.py ...`` line (its comment dropped)."""
    for line in (ROOT / "README.md").read_text().splitlines():
        words = shlex.split(line, comments=True)
        for i, word in enumerate(words[:3]):
            if word.endswith("bench/chaos.py") and i > 0 and words[i - 1].endswith("python"):
                return words[i + 1 :]
    raise AssertionError("README.md has no `python bench/chaos.py ...` line")


def planned(suite: Suite, name: str, trials: int, tmp_path) -> set[str]:
    from cluster.driver import absolute_paths
    from cluster.plan import plan_grid
    from cluster.spec import load_grid
    from cluster.worker import load_checked_bank

    data = grid_data(
        suite, name, "http://127.0.0.1:9/v1", trials, {}, ROOT / "configs/prices/2026-12.yaml", None
    )
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    spec = absolute_paths(load_grid(path))
    return {t.trial_id for t in plan_grid(spec, load_checked_bank(spec))}


def test_readme_command_gives_coherent_sizes(tmp_path):
    argv = readme_argv()
    cmd = command(argv)
    suite = cmd.suite
    assert "--trials" in argv and suite.trials == int(argv[argv.index("--trials") + 1])
    assert suite.problems() == []
    assert 1 <= suite.faults_trials <= suite.trials
    assert max(suite.kill_points()) < 1.0  # every injection comes while the grid still runs
    assert suite.work is None  # a temp work folder, removed after a passing run
    assert set(cmd.scenarios) == {"clean", "faults", "chaos", "budget"}
    # The faults scenario's trials are the clean run's first ones: each has its reference.
    clean = planned(suite, "clean", suite.trials, tmp_path)
    faults = planned(suite, "faults", suite.faults_trials, tmp_path)
    assert faults <= clean and len(faults) >= suite.faults_trials
    assert len(clean) >= suite.trials


def test_faults_trials_default_and_bounds():
    assert Suite().faults_trials == FAULTS_TRIALS  # the full-size default is unchanged
    assert Suite(trials=300).faults_trials == 300
    assert Suite(trials=300, faults_trials=45).faults_trials == 45
    with pytest.raises(ValueError, match="faults_trials 1000"):
        Suite(trials=300, faults_trials=1000)
    with pytest.raises(ValueError, match="driver_kills"):
        Suite(driver_kills=7)


def test_cli_refuses_incoherent_sizes(capsys):
    with pytest.raises(SystemExit) as exc:
        command(["--trials", "300", "--faults-trials", "1000"])
    assert exc.value.code == 2
    assert "faults_trials 1000 must be 1..trials (300)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        command(["--scenarios", "faults,chaos"])  # no reference
