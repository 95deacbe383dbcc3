"""``apiflow panel fit|check|stability``: calibrated simulated panels (``stability`` in ``panel_stability``).

``fit`` turns the published table into the pinned parameter file; ``check`` plays the calibrated
panel on a bank and prints published vs simulated with tolerances (``apiflow.panel.check``),
exiting 1 when a gated cell is outside its tolerance.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from apiflow.agent.heap import settle_loaded
from apiflow.analysis.panels import ORIGINAL_19
from apiflow.analysis.trials import select_rows, trials_from_table
from apiflow.cli import panel_stability
from apiflow.cli.panel_stability import PUBLISHED
from apiflow.errors import UsageError


def register(subparsers: Any) -> None:
    """Add the ``panel`` verb and its sub-verbs (``stability`` from ``apiflow.cli.panel_stability``)."""
    panel = subparsers.add_parser("panel", help="calibrated simulated panels: fit, check, stability")
    verbs = panel.add_subparsers(dest="panel_verb", metavar="VERB", parser_class=type(panel))

    fit = verbs.add_parser("fit", help="fit the calibrated panel's parameters to the published table")
    fit.add_argument("published", help="the published trial table (parquet)")
    fit.add_argument("--out", required=True, help="the parameter file to write (JSON)")
    fit.add_argument("--panel", default=ORIGINAL_19, help=f"published panel (default {ORIGINAL_19})")
    fit.add_argument("--models", default=None, help="fit only these published slugs (a,b: a cut-down fit)")
    fit.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="stage-1 search budget (default 1500; less: a cut-down fit)",
    )
    fit.set_defaults(func=_fit)

    check = verbs.add_parser("check", help="play the calibrated panel on a bank: published vs simulated")
    check.add_argument("--bank", required=True, help="bank folder, or a shipped bank by name (sample, v1)")
    check.add_argument("--epochs", type=int, default=5, help="trials per task (default 5, as published)")
    check.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    check.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    check.add_argument("--models", default=None, help="check only these published slugs (a,b)")
    check.add_argument("--published", default=str(PUBLISHED), help="the published trial table (parquet)")
    check.add_argument("--out", default=None, help="folder for panel_check.json/.md and the trial rows")
    check.set_defaults(func=_check)

    panel_stability.register(verbs)
    panel.set_defaults(func=lambda _args: _help(panel))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _read_published(path: str) -> pa.Table:
    if not Path(path).is_file():
        raise UsageError(f"published table {path} does not exist")
    try:
        return pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise UsageError(f"cannot read published table {path}: {exc}") from None


def _slugs(text: str | None) -> list[str] | None:
    if text is None:
        return None
    slugs = [s.strip() for s in text.split(",") if s.strip()]
    if not slugs:
        raise UsageError("--models takes comma-separated published slugs")
    return slugs


def _fit(args: argparse.Namespace) -> int:
    from apiflow.panel.fit import ITERATIONS, dump, file_sha256, fit_panel

    table = _read_published(args.published)
    start = time.monotonic()
    document = fit_panel(
        table,
        file_sha256(Path(args.published)),
        args.panel,
        _slugs(args.models),
        ITERATIONS if args.iterations is None else args.iterations,
    )
    out = Path(args.out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump(document), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror}") from None
    print(
        f"{out}: {len(document['models'])} models, sha256 {document['sha256']} ({time.monotonic() - start:.0f} s)"
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    from apiflow.models.calibrated import CALIBRATED_PANEL, load_profiles
    from apiflow.panel import check
    from apiflow.panel.play import bank_at, label, play_panel
    from apiflow.panel.stats import composition

    if args.epochs < 1 or args.jobs < 1:
        raise UsageError("--epochs and --jobs must be at least 1")
    profiles = load_profiles()
    slugs = _slugs(args.models)
    unknown = [s for s in slugs or () if s not in profiles]
    if unknown:
        raise UsageError(
            f"not in the calibrated panel: {', '.join(unknown)} (known: {', '.join(sorted(profiles))})"
        )
    models = [m for m in CALIBRATED_PANEL if slugs is None or label(m) in slugs]
    published = trials_from_table(
        select_rows(_read_published(args.published), panel=ORIGINAL_19, models=[label(m) for m in models])
    )
    worlds = len(bank_at(args.bank).worlds)
    if args.own_process:  # the bank out of the collector's walks for the whole check
        settle_loaded()
    if worlds < check.MIN_WORLDS:
        raise UsageError(
            f"bank {args.bank} has {worlds} world(s); the check's tolerances need at least {check.MIN_WORLDS}"
        )
    start = time.monotonic()
    rows = play_panel(args.bank, models, args.epochs, args.seed, args.jobs, log=_log)
    simulated = trials_from_table(rows)
    params = {label(m): profiles[label(m)].params for m in models}
    cells = check.check(published, simulated, params, composition(published), composition(simulated))
    verdict = check.summary(cells)
    text = check.table(cells, args.epochs)
    print(text)
    print(
        f"{rows.num_rows} trials in {time.monotonic() - start:.0f} s; tolerance = {verdict['z']:.2f} x "
        f"world-bootstrap SE of the difference + fit gap; {len(verdict['outside'])} of {verdict['cells']} "
        f"cells outside; sim vs its closed form: {len(verdict['sim_vs_closed_form_outside'])} outside"
    )
    if args.out:
        _write_out(Path(args.out), rows, cells, verdict, text, args)
    return 1 if verdict["outside"] else 0


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _write_out(
    out: Path, rows: pa.Table, cells: list, verdict: dict, text: str, args: argparse.Namespace
) -> None:
    from dataclasses import asdict

    document = {
        "bank": args.bank,
        "epochs": args.epochs,
        "seed": args.seed,
        **verdict,
        "cells": [
            {**asdict(c), "inside": c.inside, "sim_inside": c.sim_inside, "gated": c.gated} for c in cells
        ],
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, out / "trials.parquet")
        (out / "panel_check.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        (out / "panel_check.md").write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write to {out}: {exc.strerror}") from None
