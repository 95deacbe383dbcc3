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
