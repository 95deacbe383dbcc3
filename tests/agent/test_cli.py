"""``apiflow task list|show`` and ``apiflow run``: outputs, files, and one-line exit-2 errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apiflow.cli import main


def test_task_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["task", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# bank sample") and any(
        line.startswith("sample-w01-chain-1to02") for line in lines
    )
    assert main(["task", "show", "sample-w01-sub01"]) == 0
    out = capsys.readouterr().out
    assert "```json code block" in out and "expected card:" in out
    assert main(["task", "show", "sample-w01-sub01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "sample-w01-sub01"


def test_run_writes_published_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "run",
        "--model",
        "apiflow/sim:strong",
        "--task",
        "sample-w01-sub01",
        "sample-w01-chain-1to02",
        "--epochs",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[0].startswith("sample-w01-sub01-t1 ")
    files = sorted(p.name for p in (tmp_path / "apiflow-sim-strong").iterdir())
    assert files == [
        "sample-w01-chain-1to02-t1.json",
        "sample-w01-chain-1to02-t2.json",
        "sample-w01-sub01-t1.json",
        "sample-w01-sub01-t2.json",
    ]
    record = json.loads((tmp_path / "apiflow-sim-strong" / "sample-w01-sub01-t2.json").read_text())
    assert (
        record["model"] == "apiflow-sim-strong"
        and record["trial"] == 2
        and record["provenance"]["epoch"] == 2
    )


def test_run_blank_over_all_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--model", "apiflow/blank", "--task", "all", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 13 and all(" I  no_answer " in line and "tool_calls=0" in line for line in lines)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--model", "apiflow/nope", "--task", "all"], "unknown offline model"),
        (["run", "--model", "apiflow/sim:zzz", "--task", "all"], "unknown sim profile"),
        (["run", "--model", "apiflow/oracle", "--task", "sample-w99-sub01"], "unknown task"),
        (["run", "--model", "apiflow/oracle", "--task", "all", "--bank", "/no/such/bank"], "does not exist"),
        (["run", "--model", "apiflow/oracle", "--task", "all", "--epochs", "0"], "--epochs"),
        (["run", "--model", "apiflow/oracle", "--task", "all", "--seed", "x"], "invalid int"),
        (["run", "--model", "apiflow/oracle", "--task", "all", "--param", "oops"], "KEY=VALUE"),
        (["run", "--task", "all"], "--model"),
        (["run", "--model", "apiflow/oracle", "--task", "all", "--max-tokens", "0"], "--max-tokens"),
        (["run", "--model", "apiflow/oracle", "--task", "all", "--prices", "/no/such.yaml"], "price table"),
        (["task", "show", "nope"], "unknown task"),
        (["task", "list", "--bank", "/no/such/bank"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--out", str(tmp_path)] if argv[0] == "run" else argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("apiflow: error:") and message in err
    assert not any(tmp_path.iterdir())


def test_unwritable_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", "--model", "apiflow/oracle", "--task", "all", "--out", str(blocker)]) == 2
    assert f"--out {blocker}: is a file, not a folder" in capsys.readouterr().err


def test_provider_failure_is_reported_apart_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "run",
        "--model",
        "openai/stand-in",
        "--task",
        "sample-w01-sub01",
        "--out",
        str(tmp_path),
        "--param",
        "api_base=http://127.0.0.1:9/v1",
        "--param",
        "api_key=local",
        "--param",
        "timeout=5",
    ]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert " -  provider_error " in out and "not model failures" in out
    record = json.loads((tmp_path / "stand-in" / "sample-w01-sub01-t1.json").read_text())
    assert (record["verdict"], record["passed"], record["verifier"]) == ("", None, None)
    assert record["apiflow"]["termination"] == "provider_error"


def test_run_limits_and_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "run",
        "--model",
        "apiflow/oracle",
        "--task",
        "sample-w01-chain-1to07",
        "--max-tool-calls",
        "5",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    line = capsys.readouterr().out
    assert " I  limit (tool_calls) " in line and "tool_calls=5 " in line and "cost=$0.0000" in line
    record = json.loads((tmp_path / "apiflow-oracle" / "sample-w01-chain-1to07-t1.json").read_text())
    assert record["apiflow"]["cost_usd"] == 0.0 and record["apiflow"]["limit"] == "tool_calls"


def test_run_in_a_callers_process_leaves_its_garbage_collector_alone(tmp_path):
    """Only the console script's own process is tuned (``apiflow.cli.entry``): a notebook or a test
    that calls ``main`` keeps its thresholds and an unfrozen heap."""
    import gc

    before = (gc.get_threshold(), gc.get_freeze_count())
    assert main(["run", "--model", "apiflow/oracle", "--task", "sample-w01-sub01", "--out", str(tmp_path)]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
