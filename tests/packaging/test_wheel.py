"""Issue 27: the wheel runs anywhere. Built from this checkout and installed with no network into a
fresh venv, apiflow runs from a folder with no ``bank/`` or ``configs/``: the shipped banks, grids,
price tables and calibrated panel travel inside it and are found by name.

The fresh venv sees the dev venv's site-packages as one extra path (a ``.pth`` line) for the
dependencies; ``.pth`` files inside that path are not processed, so the dev venv's editable
finder for the checkout is not loaded and apiflow can only come from the wheel (checked).
Ray's temp dir is ours (``APIFLOW_RAY_TEMP_DIR``): whatever survives is killed by pid, never by name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "apiflow", "cluster", "bank", "configs")
CALIBRATED = "apiflow/sim:calibrated-gpt-5.5"


@dataclass(frozen=True)
class Installed:
    wheel: Path
    python: Path
    site: Path
    work: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        """``apiflow ARGS`` from the empty work folder, with the venv's own console script."""
        apiflow = self.python.parent / "apiflow"
        return subprocess.run(
            [str(apiflow), *args],
            cwd=self.work, env={**self.env, **env}, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip


def _build_wheel(base: Path) -> Path:
    """The wheel of a copy of the checkout (the build leaves nothing in the clone), offline."""
    source = base / "src"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(dist), str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (wheel,) = dist.glob("apiflow-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    wheel = _build_wheel(base)
    target = base / "venv"
    venv.create(target, with_pip=False)
    python = target / "bin" / "python"
    # The dev venv's pip installs into the fresh venv (--python): console scripts get its interpreter.
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    # After the install, so pip never saw the dev venv's apiflow as one to replace.
    dev = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz_dev_dependencies.pth").write_text("".join(f"{p}\n" for p in dev))
    work = base / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS", "VIRTUAL_ENV")}
    env.update(
        RAY_USAGE_STATS_ENABLED="0",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        APIFLOW_BANK_CACHE=str(base / "bank-cache"),
        PATH=f"{python.parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return Installed(wheel=wheel, python=python, site=site, work=work, env=env)


def test_the_wheel_carries_the_banks_and_configs(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for shipped in (
        "apiflow/_data/bank/sample/manifest.json",
        "apiflow/_data/bank/v1/manifest.json",
        "apiflow/_data/bank/v1.audit.json",
        "apiflow/_data/bank/sample.audit.json",
        "apiflow/_data/configs/grids/demo.yaml",
        "apiflow/_data/configs/prices/2027-01.yaml",
        "apiflow/_data/configs/ratelimits/default.yaml",
        "apiflow/_data/configs/panels/calibrated-original-19.json",
        "apiflow/_data/configs/panels/published-trials.parquet",
    ):
        assert shipped in names, shipped
    assert not any("__pycache__" in n for n in names)


def test_apiflow_is_imported_from_the_wheel(installed: Installed) -> None:
    probe = "import apiflow, cluster; from apiflow.resources import data_root; print(apiflow.__file__, cluster.__file__, data_root())"
    done = subprocess.run(
        [str(installed.python), "-c", probe], cwd=installed.work, env=installed.env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    apiflow_file, cluster_file, data = done.stdout.split()
    assert Path(apiflow_file).is_relative_to(installed.site)
    assert Path(cluster_file).is_relative_to(installed.site)
    assert Path(data) == installed.site / "apiflow" / "_data"
    assert not list(installed.work.iterdir())  # the work folder holds no bank/ or configs/ of its own


def test_a_shipped_bank_goes_by_name(installed: Installed) -> None:
    listing = installed.run("task", "list", "--bank", "v1")
    assert listing.returncode == 0, listing.stderr
    assert "v1-w01-sub01" in listing.stdout and "v1-w13-chain-1to14" in listing.stdout
    unknown = installed.run("task", "list", "--bank", "v9")
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == [
        "apiflow: error: cannot read bank v9: it does not exist (neither a path nor a shipped bank: sample, v1)"
    ]


def test_a_calibrated_run_then_report_and_view(installed: Installed) -> None:
    runs = installed.work / "runs"
    tasks = ("v1-w01-sub01", "v1-w01-chain-1to05", "v1-w07-sub03")
    run = installed.run(
        "run", "--model", CALIBRATED, "--task", *tasks, "--bank", "v1", "--prices", "2027-01", "--out", str(runs)
    )
    assert run.returncode == 0, run.stderr
    trials = sorted(p.name for p in (runs / "apiflow-sim-calibrated-gpt-5.5").glob("*.json"))
    assert trials == sorted(f"{t}-t1.json" for t in tasks)
    report = installed.run("report", str(runs), "--out", str(installed.work / "report"), "--bootstrap", "50")
    assert report.returncode == 0, report.stderr
    assert "calibrated-gpt-5.5" in (installed.work / "report" / "leaderboard.md").read_text()
    view = installed.run("view", str(runs), "--out", str(installed.work / "site"), "--workers", "1")
    assert view.returncode == 0, view.stderr
    assert (installed.work / "site" / "index.html").is_file()


def test_the_demo_grid_runs_by_name_then_report_and_view(installed: Installed) -> None:
    temp_dir = tempfile.mkdtemp(prefix="afw-", dir="/tmp")  # unix socket paths must stay short
    out = installed.work / "demo"
    try:
        grid = installed.run(
            "grid", "run", "demo", "--out", str(out), "--no-progress",
            timeout=300, APIFLOW_RAY_TEMP_DIR=temp_dir,
        )  # fmt: skip
    finally:
        _kill_mentioning(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert grid.returncode == 0, grid.stdout[-2000:] + grid.stderr[-2000:]
    assert "273/273 trials stored" in grid.stdout
    report = installed.run("report", str(out), "--out", str(installed.work / "demo-report"), "--bootstrap", "50")
    assert report.returncode == 0, report.stderr
    assert "oracle" in (installed.work / "demo-report" / "leaderboard.md").read_text()
    view = installed.run("view", str(out), "--out", str(installed.work / "demo-site"), "--workers", "1")
    assert view.returncode == 0, view.stderr
    assert (installed.work / "demo-site" / "index.html").is_file()


def _kill_mentioning(text: str) -> None:
    """SIGKILL the processes whose command line names ``text`` (our private Ray's; never by name)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmdline:
            try:
                os.kill(int(entry), 9)
            except ProcessLookupError:
                pass
