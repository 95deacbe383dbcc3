"""Fixtures of the viewer tests: real trials, a grid's result store, built sites, a headless browser."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from apiflow.cli import main
from apiflow.results.prices import load_price_table
from apiflow.results.record import TrialRecord
from apiflow.results.rows import record_to_row
from apiflow.results.store import ResultStore
from apiflow.viewer import build_site

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "tests" / "data" / "transcripts"
PRICES = ROOT / "configs" / "prices" / "2026-12.yaml"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CHROME_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1280,1600",
)  # fmt: skip
"""Without the networking flags chromium opens connections this sandbox refuses en masse."""
LOST_MODEL = "apiflow-sim-weak"
"""The model of the grid's never-finished trial (the filter tests use the other one)."""


def build(results: Path | str, out: Path, **options) -> Path:
    """Build a site with the pinned price table; returns its folder."""
    build_site(str(results), out, load_price_table(PRICES), **options)
    return out


@pytest.fixture(scope="session")
def own_trials(tmp_path_factory) -> Path:
    """Real trials of ours: two offline models on every sample-bank task, 3 epochs (``apiflow run``)."""
    out = tmp_path_factory.mktemp("own-trials")
    for model in ("apiflow/sim:strong", "apiflow/sim:weak"):
        code = main(["run", "--model", model, "--task", "all", "--epochs", "3", "--out", str(out)])
        assert code == 0
    return out


def records_of(folder: Path) -> list[TrialRecord]:
    """Every trial record under a folder of trial JSONs, in path order."""
    return [TrialRecord.model_validate_json(p.read_text()) for p in sorted(folder.rglob("*.json"))]


def harness_copy(record: TrialRecord, trial_id: str | None = None) -> TrialRecord:
    """The same trial ended by a provider fault (what the grid stores under ``failures/``)."""
    data = json.loads(record.to_json())
    data.update(verdict="", passed=None, failure_reason="", verifier=None)
    data["apiflow"].update(
        termination="provider_error", harness_error="RateLimitError: 429 from the stand-in"
    )
    if trial_id:
        data["apiflow"]["trial_id"] = trial_id
    return TrialRecord.model_validate(data)


@pytest.fixture(scope="session")
def own_grid(own_trials, tmp_path_factory) -> Path:
    """A grid's result store holding the own trials, a retried trial and a never-finished one."""
    out = tmp_path_factory.mktemp("grid")
    store = ResultStore(str(out))
    store.write_manifest({"grid_id": "viewer-test"})
    records = records_of(own_trials)
    for record in records:
        store.put_trial(record, record_to_row(record))
    retried = harness_copy(records[0])  # failed once, then stored: the stored trial must win
    store.put_trial(retried, record_to_row(retried))
    lost = harness_copy(next(r for r in records if r.model == LOST_MODEL), trial_id="never-finished")
    store.put_trial(lost, record_to_row(lost))
    return out


@pytest.fixture(scope="session")
def published_site(tmp_path_factory) -> Path:
    """The site of the 42 published fixture transcripts."""
    return build(PUBLISHED, tmp_path_factory.mktemp("site") / "published", workers=1)


@pytest.fixture(scope="session")
def grid_site(own_grid, tmp_path_factory) -> Path:
    """The site of the own grid (built with two worker processes and small chunks)."""
    return build(own_grid, tmp_path_factory.mktemp("site") / "grid", workers=2, chunk_files=16)


def _browser_missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed"
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not binary.exists():
            return f"{binary} is missing (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """Headless chromium through chromedriver, with the browser console log captured.

    Without chromium the browser tests skip locally, and FAIL when ``CI`` is set: CI installs
    chromium, so a CI run can never pass by silently skipping them.
    """
    missing = _browser_missing()
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run in CI: {missing}")
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="viewer-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROME_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
