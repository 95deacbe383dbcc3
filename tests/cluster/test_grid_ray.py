"""The grid runner on a real (in-process) Ray with real storage: local folders and moto S3.

Done-when checks of issue 4: one row per trial id; a killed actor loses nothing; SIGKILL of
the driver then a rerun gives no duplicate, no lost trial and the same aggregate; a budget cap
stops new trials within the in-flight reservations; provider faults are retried and recorded.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml
from clusterkit import ROOT, children, cmdline, kill_ray_of

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.cli import main
from apiflow.results.rows import PUBLISHED_COLUMNS, published_row
from apiflow.results.source import open_source
from apiflow.results.store import ResultStore
from cluster.driver import run_grid
from cluster.plan import plan_grid
from cluster.spec import GridSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

OFFLINE = ["apiflow/oracle", "apiflow/sim:strong", "apiflow/sim:weak"]


def grid(out: str, **changes) -> GridSpec:
    data = {
        "name": "t",
        "bank": str(DEFAULT_BANK),
        "models": [{"model": m} for m in OFFLINE],
        "epochs": 2,
        "out": out,
        "price_table": str(ROOT / "configs/prices/2026-12.yaml"),
        "concurrency": {"actors": 2, "batch": 8},
    }
    data.update(changes)
    return GridSpec.model_validate(data)


def stored_rows(out: str) -> list[str]:
    """The trial id of every stored row, repeats kept (per-trial rows and batch objects)."""
    return ResultStore(out).row_ids()


def aggregate(store: ResultStore) -> dict:
    rows = store.read_rows().to_pylist()
    per_model = collections.Counter((r["model"], r["passed"]) for r in rows)
    by_trial = {r["trial_id"]: (r["verdict"], r["tokens_total"], r["n_messages"]) for r in rows}
    return {"per_model": dict(per_model), "by_trial": by_trial}


@pytest.mark.parametrize("where", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_grid_completes_with_exactly_one_row_per_trial(ray_session, tmp_path, where, request):
    if where == "s3":
        url, options = request.getfixturevalue("s3_out")
        spec = grid(url, storage_options=options)
    else:
        spec = grid(str(tmp_path / "out"))
    summary = run_grid(spec, progress=False)
    planned = {t.trial_id for t in plan_grid(spec, load_bank(DEFAULT_BANK))}
    store = ResultStore(spec.out, spec.storage_options)
    rows = store.read_rows()
    assert summary.complete and summary.tally.stored == len(planned) == 78
    # every trial went through an actor's batch, and the summary splits the workers' CPU
    assert sum(w["trials"] for w in summary.workers) == 78 and len(summary.workers) == 2
    assert any(line.startswith("  workers: 2 actors, 78 offline trials") for line in summary.lines(verbose=True))
    assert not any("workers:" in line for line in summary.lines())  # profiling only when asked
    # the memo the actors' trials fill is the one their stats read (Ray ships the actor class by value)
    memos = [w["transitions"] for w in summary.workers]
    assert all(m["misses"] == m["edges"] > 0 for m in memos), memos
    assert any("world answers replayed" in line for line in summary.lines(verbose=True))
    grades = [w["grades"] for w in summary.workers]  # and the grade memo: one grade per trial asked
    assert sum(m["hits"] + m["misses"] for m in grades) == 78 and all(m["entries"] > 0 for m in grades), (
        grades
    )
    assert rows.num_rows == len(planned) and set(rows.column("trial_id").to_pylist()) == planned
    assert store.done_ids() == planned
    assert store.read_manifest()["planned_trials"] == 78
    for row in rows.to_pylist()[:10]:  # each row is its stored transcript, flattened
        transcript = store.read_transcript(row["model"], row["trial_id"])
        assert transcript["apiflow"]["trial_id"] == row["trial_id"]
        assert published_row(transcript, panel="t") == {k: row[k] for k in PUBLISHED_COLUMNS}
    again = run_grid(spec, progress=False)  # resume of a complete grid: nothing to do
    assert again.already_done == 78 and again.tally.done == 0
    if where == "local":  # the CLI verbs over the same output
        capsys = request.getfixturevalue("capsys")
        capsys.readouterr()
        assert main(["grid", "status", spec.out]) == 0
        status = capsys.readouterr().out
        assert "done 78 / 78; remaining 0; failed (harness/provider, will retry) 0" in status
        assert "apiflow-oracle" in status and "100.0%" in status
        assert main(["grid", "compact", spec.out]) == 0
        assert "into 78 trials, 3 per-model files" in capsys.readouterr().out


def test_an_actor_killed_mid_run_loses_nothing(ray_session, tmp_path):
    spec = grid(str(tmp_path / "out"), tasks={"count": 130}, epochs=2, concurrency={"actors": 2, "batch": 4})
    planned = {t.trial_id for t in plan_grid(spec, load_bank(DEFAULT_BANK))}
    result = {}
    runner = threading.Thread(target=lambda: result.setdefault("summary", run_grid(spec, progress=False)))
    runner.start()
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and runner.is_alive():
        if len(stored_rows(spec.out)) >= 60:
            workers = [p for p in children(os.getpid()) if cmdline(p).startswith("ray::TrialWorker")]
            if workers:
                killed = workers[0]
                os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    runner.join(timeout=240)
    assert killed is not None, "the grid finished before an actor could be killed"
    summary = result["summary"]
    store = ResultStore(spec.out)
    assert store.done_ids() == planned and len(stored_rows(spec.out)) == len(planned) == 780
    assert summary.complete


def _write_grid(path: Path, spec: GridSpec) -> Path:
    path.write_text(yaml.safe_dump(spec.model_dump(mode="json")))
    return path


def test_driver_sigkill_then_rerun_gives_the_uninterrupted_aggregate(ray_session, tmp_path):
    reference = grid(str(tmp_path / "reference"), tasks={"count": 100})
    run_grid(reference, progress=False)
    spec = grid(str(tmp_path / "killed"), tasks={"count": 100})
    grid_file = _write_grid(tmp_path / "grid.yaml", spec)
    ray_dir = tempfile.mkdtemp(prefix="afk-", dir="/tmp")
    env = {**os.environ, "APIFLOW_RAY_TEMP_DIR": ray_dir, "RAY_ADDRESS": ""}
    env.pop("RAY_ADDRESS")
    driver = subprocess.Popen(
        [sys.executable, "-m", "cluster.driver", str(grid_file), "--no-progress"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(stored_rows(spec.out)) < 80 and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.05)
        assert driver.poll() is None, "the driver finished before it could be killed"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    finally:
        kill_ray_of(ray_dir)  # the private Ray the killed driver had started, workers included
        shutil.rmtree(ray_dir, ignore_errors=True)
    stored_at_kill = len(stored_rows(spec.out))
    assert 0 < stored_at_kill < 600
    summary = run_grid(spec, progress=False)
    assert summary.already_done >= stored_at_kill and summary.complete
    store = ResultStore(spec.out)
    assert len(stored_rows(spec.out)) == 600 == len(store.done_ids())
    assert aggregate(store) == aggregate(ResultStore(reference.out))
    # Every stored row has its transcript, each shown once (the killed run's uncommitted archives skipped).
    shown = [Path(p).stem for p in open_source(spec.out).paths]
    assert len(shown) == 600 and set(shown) == store.done_ids()


def test_budget_cap_admits_whole_trials_and_spends_it_on_stored_ones(ray_session, tmp_path):
    table = yaml.safe_load((ROOT / "configs/prices/2026-12.yaml").read_text())
    table["version"] = "test-nominal"
    table["models"]["apiflow/*"] = {
        "input": 10.0,
        "output": 30.0,
        "cache_read": 1.0,
        "cache_write": 0.0,
        "reasoning": 30.0,
    }
    prices = tmp_path / "prices.yaml"
    prices.write_text(yaml.safe_dump(table))
    spec = grid(str(tmp_path / "out"), price_table=str(prices), budget_usd=1.0, tasks={"count": 60},
                models=[{"model": m, "max_tokens": 512} for m in OFFLINE])  # fmt: skip
    summary = run_grid(spec, progress=False)
    store = ResultStore(spec.out)
    rows = store.read_rows().to_pylist()
    failures = store.read_rows(failures=True).to_pylist()
    spent = sum(r["cost_usd"] for r in rows) + sum(r["cost_usd"] for r in failures)
    assert summary.budget_reached and summary.not_started > 0
    assert 0 < len(rows) < summary.planned
    assert failures == []  # no trial was stopped half way by the budget
    assert summary.ledger["spent_usd"] == pytest.approx(spent)  # the ledger saw every priced call
    dearest = max(r["cost_usd"] for r in rows)
    in_flight = summary.ledger["admitted"] - len(rows)
    assert in_flight == 0
    # Over the cap only by trials in flight that cost more than expected; most of the cap bought trials.
    slots = (spec.concurrency.actors or 2) * 2 * spec.concurrency.batch
    assert spent <= 1.0 + slots * dearest
    assert spent >= 0.5, (spent, summary.ledger, len(rows))
    assert any("BUDGET REACHED" in line for line in summary.lines())
    lines = summary.lines()
    assert any("on record for the grid (cap $1.00)" in line for line in lines)
    from cluster.status import grid_status

    status = "\n".join(grid_status(spec.out))
    assert f"spend on record ${spent:.4f} of the $1.00 cap" in status


def test_provider_faults_are_retried_recorded_and_exhausted_ones_resumed(ray_session, tmp_path):
    """Real litellm against the stand-in provider: one flaky endpoint, one that is down."""
    from apiflow.testing.standin_server import StandinConfig, StandinServer

    flaky_cfg = StandinConfig(p_429=0.1, p_500=0.15, p_timeout=0.04, timeout_s=3.0, seed=3)
    with StandinServer(flaky_cfg) as flaky, StandinServer(StandinConfig(p_500=1.0)) as down:
        spec = grid(
            str(tmp_path / "out"),
            models=[
                {"model": "openai/apiflow/sim:ace", "slug": "flaky",
                 "params": {"api_base": flaky, "api_key": "sk-standin", "timeout": 1.5}},
                {"model": "openai/apiflow/oracle", "slug": "down", "params": {"api_base": down, "api_key": "k"}},
            ],
            tasks={"ids": ["sample-w01-sub01", "sample-w01-sub02", "sample-w01-chain-1to03"]},
            epochs=1,
            ratelimits={"openai": {"rpm": 6000}},
            retry={"max_attempts": 8, "base_s": 0.05, "max_wait_s": 0.3, "max_elapsed_s": 60},
            concurrency={"actors": 1, "trials_per_actor": 8},  # one litellm import (seconds) is enough
            price_table=str(_offline_priced(tmp_path, "openai/apiflow/*")),
        )  # fmt: skip
        first = run_grid(spec, progress=False)
    store = ResultStore(spec.out)
    rows = store.read_rows().to_pylist()
    assert {r["model"] for r in rows} == {"flaky"} and len(rows) == 3
    assert sum(r["retries"] for r in rows) > 0
    logged = [
        r for row in rows for r in store.read_transcript("flaky", row["trial_id"])["apiflow"]["retries"]
    ]
    assert {r["status"] for r in logged} & {429, 500} and all(r["wait_s"] >= 0 for r in logged)
    assert first.gates and first.gates[0]["acquired"] >= sum(r["model_calls"] for r in rows)
    # The endpoint that was down: provider outcomes, unscored, counted, and not stored as rows.
    assert first.tally.harness == 3 and not first.complete and len(store.failed_ids()) == 3
    failures = store.read_rows(failures=True).to_pylist()
    assert all(f["termination"] == "provider_error" and f["retries"] == 7 for f in failures)
    from cluster.status import grid_status

    assert "unscored attempts by cause: InternalServerError 3" in "\n".join(grid_status(spec.out))
    with StandinServer(StandinConfig()) as healed:  # the provider is back: a resume retries them
        moved = [m.model_copy(update={"params": {"api_base": healed, "api_key": "k"}}) for m in spec.models]
        again = run_grid(spec.model_copy(update={"models": moved}), progress=False)
    assert again.already_done == 3 and again.tally.stored == 3 and again.complete
    assert store.failed_ids() == set() and len(store.done_ids()) == 6


def _offline_priced(tmp_path: Path, pattern: str) -> Path:
    table = yaml.safe_load((ROOT / "configs/prices/2026-12.yaml").read_text())
    table["models"][pattern] = dict(table["models"]["apiflow/*"])
    path = tmp_path / "prices.yaml"
    path.write_text(json.dumps(table))
    return path


def test_an_account_out_of_quota_parks_its_provider_and_burns_no_retries(ray_session, tmp_path):
    """A 429 that says the plan is spent is not a rate limit: the provider's trials wait for the next run."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Spent(BaseHTTPRequestHandler):
        calls = 0

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length") or 0))
            type(self).calls += 1
            body = json.dumps({"error": {"message": "You exceeded your current quota, please check your plan "
                                         "and billing details.", "type": "insufficient_quota",
                                         "code": "insufficient_quota"}}).encode()  # fmt: skip
            self.send_response(429)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Spent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        spec = grid(
            str(tmp_path / "out"),
            models=[
                {"model": "openai/gpt-5-mini", "slug": "spent",
                 "params": {"api_base": f"http://127.0.0.1:{server.server_address[1]}/v1", "api_key": "sk-x"}},
                {"model": "apiflow/oracle"},
            ],
            tasks={"ids": ["sample-w01-sub01", "sample-w01-sub02", "sample-w01-chain-1to03"]},
            epochs=2,
            retry={"max_attempts": 8, "base_s": 0.05, "max_wait_s": 0.3, "max_elapsed_s": 60},
            concurrency={"actors": 1, "trials_per_actor": 1},
        )  # fmt: skip
        summary = run_grid(spec, progress=False)
    finally:
        server.shutdown()
        server.server_close()
    store = ResultStore(spec.out)
    rows = store.read_rows().to_pylist()
    failures = store.read_rows(failures=True).to_pylist()
    assert {r["model"] for r in rows} == {"apiflow-oracle"} and len(rows) == 6  # the other model ran on
    assert summary.parked.get("openai", 0) >= 1 and not summary.complete
    assert failures and all(f["retries"] == 0 and "QuotaExhausted" in f["harness_error"] for f in failures)
    assert Spent.calls == len(failures)  # one call a trial: nothing burned on retries
    assert any(line.startswith("PARKED openai") for line in summary.lines())


def test_grid_verify_holds_the_store_against_the_plan(ray_session, tmp_path, capsys):
    """Acknowledged writes lost afterwards (a lifecycle rule, a hand rm): verify names what is gone."""
    from apiflow.cli import main

    spec = grid(str(tmp_path / "out"), tasks={"count": 20}, epochs=1)
    summary = run_grid(spec, progress=False)
    assert summary.complete and summary.verdict is not None and summary.verdict.stored == summary.planned
    assert main(["grid", "verify", spec.out]) == 0
    assert "whole" in capsys.readouterr().out
    batches = sorted((tmp_path / "out" / "rows" / "batches").glob("*"))
    archives = sorted((tmp_path / "out" / "transcripts" / "batches").glob("*.zip"))
    assert len(batches) >= 2 and archives
    lost = ResultStore(spec.out).done_ids()
    batches[0].unlink()  # rows of one batch gone
    kept = ResultStore(spec.out).done_ids()
    archive_of_kept = next(a for a in archives if a.stem != batches[0].stem)
    archive_of_kept.unlink()  # and another batch's transcripts
    assert main(["grid", "verify", spec.out]) == 3
    out = capsys.readouterr().out
    assert "NOT WHOLE" in out and f"{len(lost - kept)} missing: rerun the grid to fill them" in out
    assert "stored trials have none" in out
    from cluster.status import grid_status

    batches[1].write_bytes(b"not a row object")  # damaged in place: the status read sets it aside
    status = "\n".join(grid_status(spec.out))
    assert "set aside as damaged under quarantine/: 1 objects" in status


def _driver(grid_file: Path, ray_dir: str, env_extra: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "APIFLOW_RAY_TEMP_DIR": ray_dir, **(env_extra or {})}
    env.pop("RAY_ADDRESS", None)
    return subprocess.Popen(
        [sys.executable, "-m", "cluster.driver", str(grid_file), "--no-progress"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.s3
@pytest.mark.slow
def test_a_second_driver_on_a_live_s3_prefix_is_refused_and_pays_for_nothing(tmp_path, s3_out):
    url, options = s3_out
    spec = grid(url, storage_options=options, tasks={"count": 200})
    grid_file = _write_grid(tmp_path / "grid.yaml", spec)
    ray_dir = tempfile.mkdtemp(prefix="afl-", dir="/tmp")
    first = _driver(grid_file, ray_dir)
    try:
        deadline = time.monotonic() + 120
        while not ResultStore(url, options).done_ids() and first.poll() is None:  # the first one is writing
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert first.poll() is None, "the first driver finished before the second could try"
        second = subprocess.run(
            [sys.executable, "-m", "cluster.driver", str(grid_file), "--no-progress"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
        )  # fmt: skip
        assert first.wait(timeout=300) == 0
    finally:
        if first.poll() is None:
            first.kill()
        kill_ray_of(ray_dir)
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert second.returncode == 2
    assert "is being written by another grid run" in second.stderr.strip().splitlines()[-1]
    rows = ResultStore(url, options).row_ids()  # physical rows: one each, the refused driver added none
    assert len(rows) == len(set(rows)) == 200 * len(OFFLINE) * 2


@pytest.mark.slow
def test_rows_lost_while_the_grid_runs_are_a_shortfall_not_a_success(tmp_path):
    """Acknowledged writes deleted mid-run (a lifecycle rule, a hand rm): the run reads back and says so."""
    spec = grid(str(tmp_path / "out"), tasks={"count": 200})
    grid_file = _write_grid(tmp_path / "grid.yaml", spec)
    ray_dir = tempfile.mkdtemp(prefix="afs-", dir="/tmp")
    driver = _driver(grid_file, ray_dir)
    batches = tmp_path / "out" / "rows" / "batches"
    try:
        deadline = time.monotonic() + 120
        while not (batches.exists() and any(batches.iterdir())) and driver.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        gone = sorted(batches.iterdir())[0]
        gone.unlink()  # an acknowledged batch of rows, lost
        out, err = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            driver.kill()
        kill_ray_of(ray_dir)
        shutil.rmtree(ray_dir, ignore_errors=True)
    assert driver.returncode == 3, err[-2000:]
    assert "SHORTFALL: the store holds" in out and "acknowledged writes are gone" in out
    again = run_grid(spec, progress=False)  # the next run fills exactly what is missing
    assert again.complete and len(ResultStore(spec.out).done_ids()) == again.planned
