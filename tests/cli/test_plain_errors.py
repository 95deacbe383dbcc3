"""Ordinary mistakes with paths and URLs end as one plain line, exit code 2, and nothing written.

A table of (verb, mistake) cases, each run as the ``apiflow`` a user types: a file where a folder
is expected, a read-only folder, a path under a missing parent, an ``s3://`` URL whose endpoint
nobody listens on or with no credentials, ``--address`` where no Ray cluster runs. Every ``grid
run`` case fails before a Ray starts or anything is written. The read-only cases are skipped as root, which ignores
permissions.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from apiflow.cli import main
from apiflow.errors import plain_message

ROOT = Path(__file__).resolve().parents[2]
DEMO = "configs/grids/demo.yaml"
DEAD = "http://127.0.0.1:9"  # the discard port: nothing listens, so a connection is refused at once
OPTIONS = json.dumps({"client_kwargs": {"endpoint_url": DEAD}})
URL = "s3://bucket/x"
RUN = ["run", "--model", "apiflow/oracle", "--task", "sample-w01-sub01"]
EXPORT = ["transcripts", "export", "--format", "inspect"]


@dataclass(frozen=True)
class Case:
    """A command (``<file>``, ``<ro>``, ``<here>``, ``<results>`` stand for the playground's paths)
    and what its one error line must say."""

    argv: tuple[str, ...]
    says: tuple[str, ...]
    credentials: bool = True
    read_only: bool = False


def case(argv: list[str], *says: str, credentials: bool = True) -> Case:
    return Case(tuple(argv), says, credentials, read_only=any("<ro>" in a for a in argv))


NOT_A_FOLDER = "is a file, not a folder"
READ_ONLY = "is read-only: choose a writable folder"
NO_ENDPOINT = f"no endpoint reachable at {DEAD}"
NO_CREDENTIALS = f"{URL}: no credentials: set AWS_ACCESS_KEY_ID"

CASES: dict[str, Case] = {
    # A file where a folder is expected.
    "run/out-is-file": case([*RUN, "--out", "<file>"], "--out <file>:", NOT_A_FOLDER),
    "run/out-under-file": case([*RUN, "--out", "<file>/sub"], f"<file> {NOT_A_FOLDER}"),
    "report/out-is-file": case(["report", "<results>", "--out", "<file>"], "--out <file>:", NOT_A_FOLDER),
    "view/out-under-file": case(["view", "<results>", "--out", "<file>/site"], f"<file> {NOT_A_FOLDER}"),
    "grid-run/out-is-file": case(["grid", "run", DEMO, "--out", "<file>", "--no-progress"], NOT_A_FOLDER),
    "grid-status/under-file": case(["grid", "status", "<file>/grid"], f"<file> {NOT_A_FOLDER}"),
    "ingest/out-under-file": case(
        ["transcripts", "ingest", "<results>", "--out", "<file>/t.parquet"], f"<file> {NOT_A_FOLDER}"
    ),
    "export/out-under-file": case([*EXPORT, "<results>", "<file>/logs"], f"<file> {NOT_A_FOLDER}"),
    "task-list/bank-is-file": case(["task", "list", "--bank", "<file>"], "<file>"),
    # A read-only folder.
    "run/read-only": case([*RUN, "--out", "<ro>"], "--out <ro>:", READ_ONLY),
    "report/read-only": case(["report", "<results>", "--out", "<ro>/report"], f"<ro> {READ_ONLY}"),
    "view/read-only": case(["view", "<results>", "--out", "<ro>"], READ_ONLY),
    "grid-run/read-only": case(["grid", "run", DEMO, "--out", "<ro>", "--no-progress"], READ_ONLY),
    "ingest/read-only": case(["transcripts", "ingest", "<results>", "--out", "<ro>/t.parquet"], READ_ONLY),
    "export/read-only": case([*EXPORT, "<results>", "<ro>"], "<ro>:", READ_ONLY),
    # A path under a parent that does not exist.
    "grid-status/missing": case(["grid", "status", "<here>/missing/grid"], "<here>/missing/grid"),
    "task-list/missing": case(["task", "list", "--bank", "<here>/missing/bank"], "<here>/missing/bank"),
    "view/missing": case(["view", "<here>/missing/run", "--out", "<here>/site"], "<here>/missing/run"),
    "report/missing": case(["report", "<here>/missing/run", "--out", "<here>/report"], "<here>/missing/run"),
    "ingest/missing": case(
        ["transcripts", "ingest", "<here>/missing", "--out", "<here>/t.parquet"], "<here>/missing"
    ),
    # An object store nobody answers for.
    "grid-status/s3-dead": case(["grid", "status", URL, "--storage-options", OPTIONS], URL, NO_ENDPOINT),
    "view/s3-dead": case(["view", URL, "--out", "<here>/site", "--storage-options", OPTIONS], NO_ENDPOINT),
    "export/s3-dead": case([*EXPORT, URL, "<here>/logs", "--storage-options", OPTIONS], NO_ENDPOINT),
    "report/s3-dead": case(["report", URL, "--out", "<here>/report"], URL, NO_ENDPOINT),
    "grid-run/s3-dead": case(["grid", "run", DEMO, "--out", URL, "--no-progress"], URL, NO_ENDPOINT),
    # No credentials for it.
    "grid-status/s3-no-credentials": case(
        ["grid", "status", URL, "--storage-options", OPTIONS], NO_CREDENTIALS, credentials=False
    ),
    "view/s3-no-credentials": case(["view", URL, "--out", "<here>/site"], NO_CREDENTIALS, credentials=False),
    "grid-run/s3-no-credentials": case(
        ["grid", "run", DEMO, "--out", URL, "--no-progress"], NO_CREDENTIALS, credentials=False
    ),
    # No Ray cluster where --address says: refused before a manifest is written.
    "grid-run/no-ray-auto": case(
        ["grid", "run", DEMO, "--out", "<here>/grid", "--address", "auto", "--no-progress"],
        "no running Ray cluster at --address auto",
    ),
    "grid-run/no-ray-there": case(
        ["grid", "run", DEMO, "--out", "<here>/grid", "--address", "127.0.0.1:9", "--no-progress"],
        "no running Ray cluster at --address 127.0.0.1:9",
    ),
}


@dataclass(frozen=True)
class Setting:
    """What every case shares: a home for caches, and trial results to read."""

    home: Path
    results: Path


def _env(home: Path, credentials: bool) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MPLCONFIGDIR": str(home / "mpl"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "RAY_TMPDIR": str(home / "ray"),  # no record of a last cluster for `--address auto` to find
        "AWS_CONFIG_FILE": str(home / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": DEAD,  # what no flag reaches (grid YAML, report) never leaves the machine
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_RETRY_MODE": "standard",
    }
    if credentials:
        env |= {"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy"}
    return env


@pytest.fixture(scope="module")
def setting(tmp_path_factory: pytest.TempPathFactory) -> Setting:
    base = tmp_path_factory.mktemp("shared")
    home, results = base / "home", base / "results"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "apiflow.cli", *RUN, "--out", str(results)],
        cwd=ROOT, env=_env(home, True), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return Setting(home, results)


@pytest.fixture
def playground(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "afile").write_text("not a folder\n")
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o500)
    yield tmp_path
    (tmp_path / "ro").chmod(0o700)  # so pytest can clean it up


def _ray_runs_here() -> bool:
    """Whether a Ray instance runs on this machine (``--address auto`` joins any it finds)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"gcs_server" in cmdline.read_bytes():
                return True
        except OSError:
            continue
    return False


def _tree(*roots: Path) -> set[str]:
    return {os.path.join(d, n) for root in roots for d, dirs, files in os.walk(root) for n in dirs + files}


@pytest.mark.parametrize("name", list(CASES))
def test_a_mistake_is_one_plain_line(name: str, setting: Setting, playground: Path) -> None:
    case = CASES[name]
    if case.read_only and os.geteuid() == 0:
        pytest.skip("root ignores permissions")
    if "auto" in case.argv and _ray_runs_here():
        pytest.skip("a Ray instance runs on this machine: --address auto would join it")
    paths = {"<file>": playground / "afile", "<ro>": playground / "ro", "<here>": playground}
    paths["<results>"] = setting.results

    def fill(text: str) -> str:
        for key, path in paths.items():
            text = text.replace(key, str(path))
        return text

    before = _tree(playground, setting.results)
    done = subprocess.run(
        [sys.executable, "-m", "apiflow.cli", *map(fill, case.argv)],
        cwd=ROOT, env=_env(setting.home, case.credentials), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("apiflow: error:")]
    assert len(errors) == 1 and done.stderr.rstrip().endswith(errors[0]), done.stderr
    for text in case.says:
        assert fill(text) in errors[0], errors[0]
    if not name.startswith("grid-run/"):  # a grid prints its plan and estimate first
        assert len(done.stderr.splitlines()) == 1, done.stderr
    assert _tree(playground, setting.results) == before


def test_an_error_the_user_did_not_cause_keeps_its_traceback(tmp_path: Path) -> None:
    assert plain_message(ValueError("a bug"), ["run", "--out", str(tmp_path)]) is None
    assert plain_message(KeyError("x")) is None
    # A file the command never named is missing: the code's fault, not the user's.
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "/nowhere/apiflow/data.json")
    assert plain_message(missing, ["report", str(tmp_path), "--out", str(tmp_path / "r")]) is None
    assert plain_message(ConnectionError("socket"), []) is None  # an OSError naming no path
    folder = IsADirectoryError(errno.EISDIR, "Is a directory", "/nowhere/apiflow/bank")
    assert plain_message(folder, ["task", "list"]) is None
    # The machine's refusals are the user's whichever path meets them.
    denied = OSError(errno.EROFS, "Read-only file system", str(tmp_path / "cache"))
    assert plain_message(denied, []) == f"{tmp_path}/cache: {tmp_path} is read-only: choose a writable folder"


def test_the_line_names_the_flag_that_holds_the_path(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    exc = NotADirectoryError(errno.ENOTDIR, "Not a directory", str(tmp_path / "f" / "x" / "y.json"))
    line = plain_message(exc, ["view", "in", "--out", str(tmp_path / "f" / "x")])
    assert (
        line == f"--out {tmp_path}/f/x: {tmp_path}/f is a file, not a folder: name a folder for --out instead"
    )
    # A flag that takes no value is not the path's.
    parsed = argparse.Namespace(grid=str(tmp_path / "f" / "x"), dry_run=True)
    line = plain_message(exc, ["grid", "run", "--dry-run", str(tmp_path / "f" / "x")], parsed)
    assert line is not None and line.startswith(f"{tmp_path}/f/x: ")


def test_a_read_only_folder_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table's read-only cases, with the permission check answered as for a plain user (root
    writes anywhere, so there they are skipped)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) != ro and access(p, mode))
    assert main(["report", str(tmp_path), "--out", str(ro / "report")]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"apiflow: error: --out {ro}/report: {ro} is read-only: choose a writable folder for --out\n"
    )
    assert list(ro.iterdir()) == []
