"""``apiflow grid ...`` verbs: flags in step with the driver, no static import of cluster/ray."""

import subprocess
import sys
from pathlib import Path

import pytest

from apiflow.cli import build_parser, main
from cluster.driver import build_arg_parser

ROOT = Path(__file__).resolve().parents[2]


def _flags(parser):
    return sorted(a.dest for a in parser._actions if a.dest != "help")


def test_grid_run_flags_match_the_driver():
    sub = build_parser()._subparsers._group_actions[0].choices["grid"]
    run = sub._subparsers._group_actions[0].choices["run"]
    assert _flags(run) == _flags(build_arg_parser())


def test_importing_the_cli_loads_no_ray():
    code = "import sys, apiflow.cli, apiflow.cli.grid; apiflow.cli.build_parser(); print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["grid", "status", str(tmp_path / "nothing")]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    assert main(["grid", "run", str(tmp_path / "missing.yaml")]) == 2
    assert main(["grid", "compact", str(tmp_path)]) == 2
    assert main(["grid", "status", str(tmp_path), "--storage-options", "[1]"]) == 2


@pytest.mark.slow
def test_dry_run_prints_the_estimate_and_starts_nothing(tmp_path, capsys):
    assert (
        main(
            ["grid", "run", str(ROOT / "configs/grids/demo.yaml"), "--out", str(tmp_path / "o"), "--dry-run"]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "273 to run" in captured.err and "estimated cost" in captured.err
    assert not (tmp_path / "o").exists()


def test_a_filter_that_keeps_no_task_is_an_error_not_an_empty_grid(tmp_path, capsys):
    import yaml

    grid = yaml.safe_load((ROOT / "configs/grids/demo.yaml").read_text())
    grid.update(tasks={"worlds": ["w99"]}, out=str(tmp_path / "o"))
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    assert main(["grid", "run", str(tmp_path / "grid.yaml"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "keeps no task of bank sample" in err and "w99" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_second_grid_run_on_a_held_folder_is_refused_with_its_holder(tmp_path, capsys):
    import yaml

    from apiflow.results.lease import take_lease
    from apiflow.results.objects import ObjectFolder

    grid = yaml.safe_load((ROOT / "configs/grids/demo.yaml").read_text())
    grid.update(out=str(tmp_path / "o"), tasks={"ids": ["sample-w01-sub01"]})
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    held = take_lease(ObjectFolder(str(tmp_path / "o")), "otherhost pid 4242 (attempt x)")
    assert main(["grid", "run", str(tmp_path / "grid.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "being written by another grid run (otherhost pid 4242" in err
    assert not (tmp_path / "o" / "manifest.json").exists()  # refused before Ray and before any write
    held.release()


@pytest.mark.slow
def test_ctrl_c_keeps_what_is_stored_and_says_how_to_resume(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it (Ray's processes included)."""
    import os
    import re
    import signal
    import time

    import yaml

    from apiflow.results.lease import take_lease
    from apiflow.results.objects import ObjectFolder
    from apiflow.results.store import ResultStore

    grid = yaml.safe_load((ROOT / "configs/grids/demo.yaml").read_text())
    grid.update(out=str(tmp_path / "o"), tasks={"count": 3000}, epochs=1)
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    command = [sys.executable, "-m", "apiflow.cli", "grid", "run", str(tmp_path / "grid.yaml"), "--no-progress"]
    # As a terminal starts a command: SIGINT delivered and handled by default. What this test process
    # inherited from earlier tests (a signal mask, an ignored SIGINT: both pass to children) must not
    # decide whether the driver can be interrupted.
    inherited = (signal.getsignal(signal.SIGINT), signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))

    def as_a_terminal_starts_it() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=as_a_terminal_starts_it)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not ResultStore(str(tmp_path / "o")).done_ids() and proc.poll() is None:  # trials are stored
            assert time.monotonic() < deadline
            time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, f"inherited {inherited}; stdout: {out[-1500:]}\nstderr: {err[-1500:]}"
    found = re.search(r"INTERRUPTED: (\d+) of 21000 trials stored; nothing is lost\. Resume with: (.+)", out)
    assert found, out[-2000:]
    assert found[2] == f"apiflow grid run {tmp_path / 'grid.yaml'} --out {tmp_path / 'o'}"
    assert int(found[1]) == len(ResultStore(str(tmp_path / "o")).done_ids()) > 0
    take_lease(ObjectFolder(str(tmp_path / "o")), "the resume").release()  # the lease was given back
