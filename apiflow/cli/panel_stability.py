"""``apiflow panel stability``: build private splits, play the panel on each, measure ranking stability.

Layout of ``--out DIR`` (everything resumable: a bank is reused when it loads with the asked
number of worlds; a (split, model, epoch) trial file is skipped when it exists, and its folder
carries the bank hash and run seed, so a changed bank or seed is replayed, never mixed in):

    DIR/banks/s<seed>/                                  the split (``apiflow bank build --seed S``)
    DIR/trials/<bank>-<hash12>-r<seed>/<model>-e<N>.parquet   one model's rows of epoch N
    DIR/stability.json, stability.md, rank_spread.png

Epochs are played epoch-major (epoch 1 of every model on every split first), so a run stopped
early is reported with fewer whole epochs (``--epochs`` lower) without replaying anything.

The computation is ``apiflow.panel.stability``; the tables and plot are ``stability_report``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from apiflow.agent.heap import settle_loaded
from apiflow.agent.replay import Replay, replay_for
from apiflow.bank.loader import load_bank
from apiflow.errors import UsageError
from apiflow.resources import shipped
from apiflow.runner.pool import in_worker, replay_pool

PUBLISHED = shipped("configs/panels/published-trials.parquet")
"""The published table the pinned panel fit was made from (``--published`` names another copy)."""

V1 = shipped("bank/v1")


def register(panel_subparsers: Any) -> None:
    """Add ``panel stability`` to the ``panel`` verb's sub-parsers."""
    p = panel_subparsers.add_parser(
        "stability", help="ranking stability of the panel across regenerated private splits"
    )
    p.add_argument("--seeds", default="1,2,3,4,5", help="split seeds (default 1,2,3,4,5)")
    p.add_argument("--worlds", type=int, default=None, help="build only the first N worlds (default all 13)")
    p.add_argument("--epochs", type=int, default=5, help="trials per model and task (default 5)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--models", default=None, help="published slugs a,b,... (default: the 19 calibrated)")
    p.add_argument("--bootstrap", type=int, default=10_000, help="world resamples per split (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="run and bootstrap seed (default 0)")
    p.add_argument("--v1", action="store_true", help="also play bank/v1 and compare every split with it")
    p.add_argument("--published", default=None, help="published trial table (default: the checkout's)")
    p.add_argument("--out", required=True, help="output folder (splits, trials, report)")
    p.set_defaults(func=_stability)


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--seeds takes comma-separated integers (got {text!r})") from None
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise UsageError("--seeds needs at least two distinct seeds")
    return seeds


def _models(text: str | None) -> list[str]:
    from apiflow.models.calibrated import CALIBRATED_PANEL
    from apiflow.panel.play import label

    if text is None:
        return list(CALIBRATED_PANEL)
    slugs = [s.strip() for s in text.split(",") if s.strip()]
    known = {label(m): m for m in CALIBRATED_PANEL}
    unknown = [s for s in slugs if s not in known]
    if len(slugs) < 2 or unknown:
        raise UsageError(
            "--models takes at least two calibrated-panel slugs"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )
    return [known[s] for s in slugs]


def split_bank(seed: int, out: Path, worlds: int | None) -> Path:
    """The split of ``seed`` under ``out/banks``, built unless one with the asked worlds loads."""
    from apiflow.authoring.generate import build_bank

    path = out / "banks" / f"s{seed}"
    want = 13 if worlds is None else worlds
    try:
        if len(load_bank(path).worlds) == want:
            return path
    except (OSError, ValueError, UsageError):
        pass
    if path.is_dir() and not (path / "manifest.json").is_file():
        shutil.rmtree(path)  # a build cut short (the manifest is written last); ours to redo
    path.parent.mkdir(parents=True, exist_ok=True)
    build_bank(seed, path, worlds=worlds)
    return path


def _bank_id(bank_path: Path) -> tuple[str, str]:
    from apiflow.panel.play import bank_at  # loaded once per path and process, shared with play_epoch

    bank = bank_at(str(bank_path))
    return bank.name, bank.hash


def trial_file(out: Path, bank_path: Path, model: str, epoch: int, seed: int) -> Path:
    """Where one model's rows of one epoch on one bank go; the name pins bank hash and run seed."""
    from apiflow.panel.play import label

    name, digest = _bank_id(bank_path)
    return out / "trials" / f"{name}-{digest[:12]}-r{seed}" / f"{label(model)}-e{epoch}.parquet"


def play_unit(
    bank_path: str, model: str, epoch: int, seed: int, path: str, replay: Replay | None = None
) -> int:
    """Play one epoch of one model on one bank; write its rows atomically (a kill leaves no half file)."""
    from apiflow.panel.play import SCHEMA, play_epoch

    rows = play_epoch(bank_path, model, epoch, seed, replay)
    tmp = Path(path).with_suffix(f".tmp{os.getpid()}")
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), tmp)
    tmp.replace(path)
    return len(rows)


def _play(units: list[tuple[Path, str, int, Path]], seed: int, jobs: int) -> None:
    todo = [u for u in units if not u[3].is_file()]
    say(
        f"{len(units) - len(todo)} of {len(units)} (bank, model, epoch) trial files already there; {len(todo)} to play"
    )
    for unit in todo:
        unit[3].parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    args = [(str(b), m, e, seed, str(p)) for b, m, e, p in todo]

    def done(a: tuple, n: int) -> None:
        say(f"{Path(a[4]).parent.name}/{Path(a[4]).stem}: {n} trials ({time.monotonic() - start:.0f} s)")

    models = tuple(dict.fromkeys(a[1] for a in args))
    if jobs <= 1:
        replay = replay_for(models)
        for a in args:
            done(a, play_unit(*a, replay=replay))
        return
    with replay_pool(jobs, models) as pool:
        futures = [pool.submit(in_worker, play_unit, b, m, e, s, p) for b, m, e, s, p in args]
        for a, future in zip(args, futures, strict=True):
            done(a, future.result())


def say(message: str) -> None:
    """Progress on stderr (stdout carries the summary)."""
    print(message, file=sys.stderr, flush=True)


def _counts(name: str, files: list[Path]):
    from apiflow.analysis.trials import trials_from_table
    from apiflow.panel.stability import split_counts

    return split_counts(name, trials_from_table(pa.concat_tables([pq.read_table(f) for f in files])))


def _published_rates(path: str | None, models: list[str]) -> dict[str, float]:
    from apiflow.analysis.panels import ORIGINAL_19
    from apiflow.analysis.trials import select_rows, trials_from_table
    from apiflow.panel.stability import split_counts

    source = Path(path) if path else PUBLISHED
    if not source.is_file():
        raise UsageError(f"published table {source} does not exist")
    table = select_rows(pq.read_table(source), panel=ORIGINAL_19, models=models)
    counts = split_counts("published", trials_from_table(table))
    return dict(zip(counts.models, counts.rates.tolist(), strict=True))


def _stability(args: argparse.Namespace) -> int:
    from apiflow.panel.play import label
    from apiflow.panel.stability import stability

    seeds = _seeds(args.seeds)
    models = _models(args.models)
    if not 1 <= args.epochs <= 20 or not 1 <= args.jobs <= 64:
        raise UsageError("--epochs must be 1-20 and --jobs 1-64")
    if args.worlds is not None and not 2 <= args.worlds <= 13:
        raise UsageError("--worlds must be between 2 and 13 (a world bootstrap needs worlds to resample)")
    if args.bootstrap < 2:
        raise UsageError("--bootstrap must be at least 2")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out}: {exc.strerror}") from None
    banks = {f"s{seed}": split_bank(seed, out, args.worlds) for seed in seeds}
    if args.v1:
        banks["bank/v1"] = V1
    # Epoch-major: every split gets epoch 1 of every model before any gets epoch 2, so a run cut
    # short still has whole epochs on every split (``--epochs`` lower then reuses every file).
    units = [
        (b, m, e, trial_file(out, b, m, e, args.seed))
        for e in range(1, args.epochs + 1)
        for b in banks.values()
        for m in models
    ]
    if args.own_process:  # the banks trial_file loaded, out of the collector's walks for the whole play
        settle_loaded()
    _play(units, args.seed, args.jobs)
    files = {
        name: [trial_file(out, b, m, e, args.seed) for e in range(1, args.epochs + 1) for m in models]
        for name, b in banks.items()
    }
    splits = [_counts(f"s{seed}", files[f"s{seed}"]) for seed in seeds]
    slugs = [label(m) for m in models]
    references = {"published": _published_rates(args.published, slugs)}
    if args.v1:
        v1 = _counts("bank/v1", files["bank/v1"])
        references["bank/v1"] = dict(zip(v1.models, v1.rates.tolist(), strict=True))
    record = stability(splits, references, bootstrap=args.bootstrap, seed=args.seed)
    record["setup"] = {
        "seeds": seeds,
        "worlds": args.worlds or 13,
        "epochs": args.epochs,
        "run_seed": args.seed,
        "models": slugs,
        "banks": {name: files[name][0].parent.name for name in banks},
    }
    from apiflow.panel.stability_report import write_report  # matplotlib: imported only to draw

    text = write_report(record, out)
    print(text)
    return 0
