"""Inspect export and read-back at grid scale: a real offline grid, exported and read back.

One command: ``.venv/bin/python bench/bench_inspect.py [--trials 16345] [--keep DIR]``.

Runs the demo grid's seven offline models on every sample-bank task with as many epochs as it
takes to reach ``--trials`` real trials (``apiflow run``, no Ray), then measures in the same run:

* baseline: ``transcripts ingest`` of the trial JSON folder (read + parse + flatten + Parquet);
* ``transcripts export --format inspect`` of that folder (one ``.eval`` per model);
* ``transcripts ingest`` of the ``.eval`` logs (read back without inspect_ai), and that its rows
  equal the baseline's;
* when inspect_ai is installed: ``read_eval_log`` (full) and ``read_eval_log_samples`` (streaming)
  of every log, Inspect's own readers;

and prints seconds, trials/s, the ratios to the baseline, the bytes on disk and peak memory.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pyarrow.parquet as pq  # noqa: E402

from apiflow.cli import main  # noqa: E402

MODELS = ("apiflow/oracle", "apiflow/blank", "apiflow/sim:ace", "apiflow/sim:strong", "apiflow/sim:steady",
          "apiflow/sim:erratic", "apiflow/sim:weak")  # fmt: skip
SAMPLE_TASKS = 13


def quiet(argv: list[str]) -> None:
    """One ``apiflow`` command with its per-trial lines swallowed; fails loudly."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"apiflow {' '.join(argv)} exited {code}")


def timed(label: str, fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    seconds = time.perf_counter() - start
    print(f"  {label:<44} {seconds:8.1f} s", flush=True)
    return seconds


def folder_bytes(folder: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in folder.rglob(pattern))


def inspect_reads(logs: list[Path]) -> tuple[float, float] | None:
    try:
        from inspect_ai.log import read_eval_log, read_eval_log_samples
    except ImportError:
        return None
    full = timed(
        "inspect_ai read_eval_log (every log, full)",
        lambda: [len(read_eval_log(str(p)).samples) for p in logs],
    )
    streamed = timed(
        "inspect_ai read_eval_log_samples (streaming)",
        lambda: [sum(1 for _ in read_eval_log_samples(str(p), all_samples_required=False)) for p in logs],
    )
    return full, streamed


def run(trials: int, work: Path) -> None:
    epochs = math.ceil(trials / (len(MODELS) * SAMPLE_TASKS))
    records, logs = work / "records", work / "logs"
    print(f"running {len(MODELS)} models x {SAMPLE_TASKS} tasks x {epochs} epochs ...", flush=True)
    start = time.perf_counter()
    for model in MODELS:
        quiet(["run", "--model", model, "--task", "all", "--epochs", str(epochs), "--out", str(records)])
    n = sum(1 for _ in records.rglob("*.json"))
    print(
        f"  {n:,} real trials in {time.perf_counter() - start:.0f} s ({folder_bytes(records, '*.json') / 1e6:,.0f} MB JSON)"
    )
    base = timed("baseline: ingest of the JSON folder", quiet,
                 ["transcripts", "ingest", str(records), "--out", str(work / "records.parquet")])  # fmt: skip
    export = timed(
        "export --format inspect",
        quiet,
        ["transcripts", "export", "--format", "inspect", str(records), str(logs)],
    )
    back = timed(
        "ingest of the .eval logs",
        quiet,
        ["transcripts", "ingest", str(logs), "--out", str(work / "logs.parquet")],
    )
    same = (
        pq.read_table(work / "logs.parquet")
        .sort_by("trial_id")
        .equals(pq.read_table(work / "records.parquet").sort_by("trial_id"))
    )
    eval_files = sorted(logs.glob("*.eval"))
    print(
        f"  {len(eval_files)} logs, {folder_bytes(logs, '*.eval') / 1e6:,.1f} MB; rows of the logs == rows of the records: {same}"
    )
    print(f"export:  {n / export:8,.0f} trials/s   {export / base:5.2f}x the baseline ingest")
    print(f"ingest of the logs: {n / back:8,.0f} trials/s   {back / base:5.2f}x the baseline ingest")
    reads = inspect_reads(eval_files)
    if reads is None:
        print("inspect_ai not installed: its readers not measured")
    else:
        print(
            f"inspect_ai full read: {n / reads[0]:8,.0f} trials/s   {reads[0] / base:5.2f}x the baseline ingest"
        )
        print(
            f"inspect_ai streaming: {n / reads[1]:8,.0f} trials/s   {reads[1] / base:5.2f}x the baseline ingest"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak:,.0f} MB")
    if not same:
        raise SystemExit("the logs' rows differ from the records' rows")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=16_345, help="real trials to run (default 16,345)")
    parser.add_argument(
        "--keep", type=Path, default=None, help="work folder to keep (default: a temp folder)"
    )
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-inspect-"))
    try:
        run(args.trials, work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    cli()
