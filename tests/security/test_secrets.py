"""No provider key, bearer token or auth header from the environment reaches anything the harness writes.

A grid runs through the real litellm path on a private local Ray against the stand-in provider,
which quotes the request's ``Authorization`` header back in every fault body (429, 5xx, a 200 with
a non-JSON body). Fake keys sit in the environment (inherited by every actor) and in an ``api_key``
grid param. Then every byte written is scanned for each key in plain, URL-encoded and base64 form:
the result folder (rows, transcripts, failures, compacted files, manifest, attempts), the report
folder of ``apiflow report``, the output of ``apiflow grid status``, this process's stdout/stderr
(file-descriptor level) and log records, and the private Ray's own session folder (actor logs).

The control test runs the same grid in process (``TrialRunner``: the same record/row/store
writers the actors use) with the redactor replaced by the identity, and the scan must find the
keys: the scan can fail, and redaction is what makes it pass.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from secretscan import files_under, scan

from apiflow.bank import DEFAULT_BANK
from apiflow.cli import main
from apiflow.results.store import ResultStore
from apiflow.testing.standin_server import StandinConfig, StandinServer

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TASKS = ["sample-w01-sub01", "sample-w01-sub02", "sample-w01-chain-1to02"]
DOWN = StandinConfig(p_500=1.0, echo_auth=True)
FLAKY = StandinConfig(p_429=0.1, p_500=0.25, p_garbage=0.1, echo_auth=True, seed=7)


def _prices(tmp_path: Path) -> Path:
    table = yaml.safe_load((ROOT / "configs/prices/2026-12.yaml").read_text())
    table["models"]["openai/apiflow/*"] = dict(table["models"]["apiflow/*"])
    path = tmp_path / "prices.yaml"
    path.write_text(json.dumps(table))
    return path


def _spec(tmp_path: Path, down: str, flaky: str, grid_api_key: str):
    from cluster.spec import GridSpec

    return GridSpec.model_validate(
        {
            "name": "secrets",
            "bank": str(DEFAULT_BANK),
            "models": [
                # No api_key param: litellm sends OPENAI_API_KEY from the (actor's) environment.
                {"model": "openai/apiflow/oracle", "slug": "env-key-down", "params": {"api_base": down}},
                {"model": "openai/apiflow/sim:ace", "slug": "param-key-flaky",
                 "params": {"api_base": flaky, "api_key": grid_api_key, "timeout": 5}},
            ],  # fmt: skip
            "tasks": {"ids": TASKS},
            "epochs": 2,
            "out": str(tmp_path / "out"),
            "price_table": str(_prices(tmp_path)),
            "retry": {"max_attempts": 3, "base_s": 0.01, "max_wait_s": 0.05, "max_elapsed_s": 20},
            "concurrency": {"actors": 1, "trials_per_actor": 8},
        }
    )


@contextmanager
def captured_logs() -> Iterator[io.StringIO]:
    """Every log record of this process at DEBUG and above, formatted with its traceback."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield buffer
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def _report_and_status(out: Path, report: Path) -> None:
    assert main(["report", str(out), "--out", str(report), "--bootstrap", "50"]) == 0
    main(["grid", "status", str(out)])


def _assert_faults_were_recorded(store: ResultStore) -> list[str]:
    """The run really recorded provider errors whose text quoted the credentials (redacted)."""
    failures = store.read_rows(failures=True).to_pylist()
    messages = [f["harness_error"] for f in failures if f["termination"] == "provider_error"]
    assert len(messages) >= len(TASKS) * 2  # at least every trial of the model that is down
    assert any("request credentials:" in m for m in messages)
    return messages


def test_a_grid_with_fake_keys_writes_no_key_anywhere(fake_keys, keyed_ray, tmp_path, capfd):
    from cluster.driver import run_grid

    with StandinServer(DOWN) as down, StandinServer(FLAKY) as flaky, captured_logs() as logs:
        spec = _spec(tmp_path, down, flaky, fake_keys.grid_api_key)
        summary = run_grid(spec, progress=False)
        for line in summary.lines():
            print(line)
        store = ResultStore(spec.out)
        store.compact()
        _report_and_status(tmp_path / "out", tmp_path / "report")
    out, err = capfd.readouterr()

    messages = _assert_faults_were_recorded(store)
    assert any("[REDACTED]" in m for m in messages)
    assert summary.tally.retries > 0  # the flaky endpoint's faults went through the retry log
    written = files_under(tmp_path / "out", tmp_path / "report", keyed_ray)
    assert any("/rows/" in p for p in written) and any("/failures/" in p for p in written)
    assert any(p.endswith("manifest.json") for p in written)
    assert any(p.endswith("report.html") for p in written)
    assert any("/logs/" in p for p in written)  # the Ray session's own files are in the scan
    sources = {**written, "stdout": out.encode(), "stderr": err.encode(), "logging": logs.getvalue().encode()}
    leaks = scan(sources, fake_keys.all)
    assert leaks == [], "\n".join(map(str, leaks[:20]))


def test_the_scan_finds_the_keys_when_redaction_is_removed(fake_keys, tmp_path, monkeypatch):
    """Control: same grid, same writers, in process, redactor = identity -> the keys are found.

    Both points are turned off: the adapter's exception boundary and the loop's
    ``harness_error_text``, which redacts every model's error text again."""
    import apiflow.agent.loop as loop
    import apiflow.models.faults as faults  # the adapter's exception boundary
    from cluster.worker import TrialRunner

    monkeypatch.setattr(faults, "redact", lambda text, extra=(): text)
    monkeypatch.setattr(loop, "redact", lambda text, extra=(): text)
    from cluster.driver import absolute_paths
    from cluster.plan import plan_grid
    from cluster.worker import load_checked_bank

    with StandinServer(DOWN) as down, StandinServer(FLAKY) as flaky:
        spec = absolute_paths(_spec(tmp_path, down, flaky, fake_keys.grid_api_key))
        runner = TrialRunner(spec, "control")
        asyncio.run(runner.run_batch(plan_grid(spec, load_checked_bank(spec))))
    _assert_faults_were_recorded(runner.store)
    leaks = scan(files_under(tmp_path / "out"), fake_keys.all)
    found = {leak.key_name for leak in leaks}
    assert {"OPENAI_API_KEY", "grid params api_key"} <= found
    assert any("/failures/" in leak.where and "[parquet cells]" in leak.where for leak in leaks)
