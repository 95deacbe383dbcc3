"""``apiflow bank screen-eval``: the zero-pass screen's precision and recall on planted splits.

For each seed: build a private split with underspecified chains planted at known cells
(``bank build --plant-underspecified``), play every chain with every panel model for E epochs
in process (each trial through the grounded view, ``apiflow/authoring/grounded.py``, the same way for
every cell), apply the screen at thresholds 0, <=1, <=3 passes per cell, and score the flagged
cells against the planted ones. Writes ``screen_eval.json``, ``screen_eval.md`` (the report
section) and ``screen_pr.png`` into the output folder; the banks and their ground truth go to
``OUT/banks/``. Method: docs/design/071-screen-and-carried.md;
measured results: docs/results/071-screen-and-carried-measurements.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from apiflow.agent.ids import trial_seed
from apiflow.agent.replay import Replay, replay_for
from apiflow.analysis.screen import cells_at_most
from apiflow.analysis.trials import trials_from_table
from apiflow.authoring.generate.plant import read_side_file
from apiflow.authoring.grounded import GroundedView
from apiflow.bank.loader import Bank, load_bank
from apiflow.errors import UsageError
from apiflow.models.base import ModelClient
from apiflow.models.registry import OFFLINE_PROFILES, SIM_PREFIX, check_model_name, make_model, model_slug
from apiflow.runner import Run, TrialPlan
from apiflow.runner.pool import in_worker, replay_pool

THRESHOLDS = (0, 1, 3)
"""A cell is flagged when its passes over the panel's trials are at most this many."""


@dataclass(frozen=True, slots=True)
class Score:
    """The screen at one threshold on one split (or pooled over splits)."""

    seed: int | None  # None: pooled
    threshold: int
    flagged: int
    planted: int
    hits: int  # planted cells the screen flags
    cells: int  # chain cells screened

    @property
    def precision(self) -> float | None:
        """Share of flagged cells that were planted (None when nothing is flagged)."""
        return self.hits / self.flagged if self.flagged else None

    @property
    def recall(self) -> float | None:
        """Share of planted cells the screen flags (None when nothing was planted)."""
        return self.hits / self.planted if self.planted else None

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {**asdict(self), "precision": self.precision, "recall": self.recall}


def panel_models(panel: str) -> list[str]:
    """``calibrated`` (the 19 calibrated sims), ``sims`` (the five named sim profiles) or model names a,b,c."""
    if panel == "sims":
        return [SIM_PREFIX + p for p in OFFLINE_PROFILES]
    if panel == "calibrated":
        try:  # the calibrated panel's module, looked up by name: a checkout without it still runs `sims`
            module = importlib.import_module("apiflow.models.calibrated")
        except ImportError:
            raise UsageError("the calibrated panel is not in this checkout; use --panel sims") from None
        return list(module.calibrated_panel())
    models = [m.strip() for m in panel.split(",") if m.strip()]
    if not models:
        raise UsageError("--panel takes 'calibrated', 'sims' or comma-separated model names")
    for model in models:
        if "/" not in model:
            raise UsageError(
                f"unknown panel {model!r}: --panel takes 'calibrated', 'sims' or offline model names (apiflow/...)"
            )
        if not model.startswith(
            "apiflow/"
        ):  # checked first: a provider name would load litellm to be refused
            raise UsageError(
                f"screen evaluation plays offline models only (the grounded view), not {model!r}"
            )
        check_model_name(model)
    return models


@cache
def _bank(path: str) -> Bank:
    return load_bank(path)


def guess_rng(model: str, task_id: str, tseed: int) -> random.Random:
    """The grounded view's guesses for one trial, derived from content by sha256."""
    digest = hashlib.sha256(f"guess|{model}|{task_id}|{tseed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def play_model(
    bank_path: str, model: str, epochs: int, seed: int, replay: Replay | None = None
) -> list[dict[str, Any]]:
    """Every chain of the bank x ``epochs`` trials of ``model`` through the grounded view: one row per trial."""
    bank = _bank(bank_path)
    chains = [t for t in bank.tasks.values() if t.kind == "chain"]
    views = {t.id: GroundedView(t, bank.world_of(t)) for t in chains}
    slug = model_slug(model)

    run = Run(bank, f"screen-eval-{bank.hash[:12]}", seed, replay=replay)
    trials = [TrialPlan(model, task, epoch) for epoch in range(1, epochs + 1) for task in chains]

    def grounded(trial: TrialPlan) -> ModelClient:
        # The model plays the task as its grounded view, drawn per trial, makes it look.
        tseed = trial_seed(seed, trial.task.id, trial.epoch)
        played = views[trial.task.id].play(guess_rng(model, trial.task.id, tseed))
        return make_model(model, played, tseed)

    async def run_all() -> list[dict[str, Any]]:
        rows = []
        async for record in run.play(trials, grounded):
            rows.append(
                {
                    "model": slug,
                    "task_id": record.task_id,
                    "epoch": record.trial,
                    "verdict": record.verdict,
                    "harness": record.is_harness_outcome,
                }
            )
        return rows

    return asyncio.run(run_all())


def score_split(rows: list[dict[str, Any]], planted: set[str], seed: int | None) -> list[Score]:
    """The screen at every threshold over one split's trial rows."""
    trials = trials_from_table(pa.Table.from_pylist(rows))
    cells = sum(1 for t in trials.tasks if "-chain-" in t)
    out = []
    for threshold in THRESHOLDS:
        flagged = set(cells_at_most(trials, threshold))
        out.append(Score(seed, threshold, len(flagged), len(planted), len(flagged & planted), cells))
    return out


def pooled(scores: list[Score]) -> list[Score]:
    """Scores summed over splits, per threshold (micro-averaged precision and recall)."""
    out = []
    for threshold in THRESHOLDS:
        mine = [s for s in scores if s.threshold == threshold]
        out.append(
            Score(
                None,
                threshold,
                sum(s.flagged for s in mine),
                sum(s.planted for s in mine),
                sum(s.hits for s in mine),
                sum(s.cells for s in mine),
            )
        )
    return out


LENGTH_BANDS = ((2, 6), (7, 11), (12, 16), (17, 20))
"""Chain-length bands of the report (those of docs/design/060's offline-model table)."""


def by_length(cell_passes: dict[str, int], planted: set[str]) -> list[dict[str, Any]]:
    """Per chain-length band: planted and good cells, and how many of each the screen flags per threshold."""
    out = []
    for low, high in LENGTH_BANDS:
        mine = {t: n for t, n in cell_passes.items() if low <= int(t.rsplit("1to", 1)[1]) <= high}
        row: dict[str, Any] = {"lengths": f"{low}-{high}"}
        for name, group in (("planted", planted), ("good", set(mine) - planted)):
            passes = [n for t, n in mine.items() if t in group]
            row[name] = len(passes)
            row.update({f"{name}_flagged_at_{t}": sum(n <= t for n in passes) for t in THRESHOLDS})
        out.append(row)
    return out


def cell_passes(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Passes per chain cell over a split's rows.

    Harness faults are left out, as the screen leaves them out: a cell whose trials all ended in a
    harness fault has no counted trial and is not a cell the screen can flag.
    """
    out: dict[str, int] = {}
    for r in rows:
        if "-chain-" in r["task_id"] and not r["harness"]:
            out[r["task_id"]] = out.get(r["task_id"], 0) + (r["verdict"] == "C")
    return out


def build_split(seed: int, root: Path, worlds: int | None, per_world: int) -> tuple[Path, set[str]]:
    """Build (or reuse, when its recorded hash still matches) the planted split of ``seed``."""
    from apiflow.authoring.generate import build_bank

    out = root / "banks" / f"s{seed}p"
    try:
        record = read_side_file(out)
        bank = load_bank(out)
        if record["bank_hash"] != bank.hash or record["per_world"] != per_world or _worlds(bank) != worlds:
            raise ValueError("stale")
    except (OSError, ValueError, KeyError, UsageError):
        (root / "banks").mkdir(parents=True, exist_ok=True)
        build_bank(seed, out, worlds=worlds, plant=per_world)
        record = read_side_file(out)
    return out, {c["task_id"] for c in record["cells"]}


def _play_all(units: list[tuple[int, str, str]], epochs: int, jobs: int) -> Iterator[list[dict[str, Any]]]:
    """Rows of every (seed, bank, model) unit, in order; ``jobs`` > 1 plays units in worker processes
    (trials are CPU-bound Python, so processes, not threads)."""
    models = tuple(dict.fromkeys(model for _, _, model in units))
    if jobs == 1:
        replay = replay_for(models)
        yield from (play_model(path, model, epochs, seed, replay) for seed, path, model in units)
        return
    with replay_pool(jobs, models) as pool:
        futures = [pool.submit(in_worker, play_model, path, model, epochs, seed) for seed, path, model in units]
        yield from (f.result() for f in futures)


def _worlds(bank: Bank) -> int | None:
    return None if len(bank.worlds) == 13 else len(bank.worlds)


def evaluate(
    seeds: list[int],
    models: list[str],
    out: Path,
    *,
    epochs: int = 5,
    worlds: int | None = None,
    per_world: int = 2,
    jobs: int = 1,
    progress: Any = None,
) -> dict[str, Any]:
    """Build the planted splits, play the panel, score the screen; returns the JSON record."""
    say = progress or (lambda _text: None)
    splits = []
    for seed in seeds:
        path, planted = build_split(seed, out, worlds, per_world)
        say(f"s{seed}p: {len(planted)} planted cell(s) in {path}")
        splits.append((seed, planted))
    units = [(seed, str(out / "banks" / f"s{seed}p"), model) for seed, _ in splits for model in models]
    rows_by_seed: dict[int, list[dict[str, Any]]] = {seed: [] for seed in seeds}
    for (seed, _, model), rows in zip(units, _play_all(units, epochs, jobs), strict=True):
        rows_by_seed[seed].extend(rows)
        say(f"s{seed}p {model}: {len(rows)} trials")
    for seed, rows in rows_by_seed.items():
        (out / f"trials-s{seed}p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = {"seeds": seeds, "models": models, "epochs": epochs, "worlds": worlds, "per_world": per_world}
    record = summarise(meta, dict(splits), rows_by_seed)
    write_outputs(record, out)
    return record


def panel_fit(models: list[str]) -> str | None:
    """The content hash of the calibrated panel's pinned fit when the panel plays calibrated models."""
    if not any(m.startswith(SIM_PREFIX + "calibrated-") for m in models):
        return None
    module = importlib.import_module("apiflow.models.calibrated")
    return str(json.loads(Path(module.PANEL_FILE).read_text())["sha256"])


def summarise(
    meta: dict[str, Any], planted: dict[int, set[str]], rows_by_seed: dict[int, list[dict[str, Any]]]
) -> dict[str, Any]:
    """The JSON record from every split's trial rows (what ``trials-s<seed>p.jsonl`` holds)."""
    from apiflow.analysis.screen_section import over_seeds

    scores: list[Score] = []
    passes: dict[str, int] = {}
    for seed, rows in rows_by_seed.items():
        scores += score_split(rows, planted[seed], seed)
        passes |= cell_passes(rows)
    planted_ids = set().union(*planted.values())
    all_scores = [s.as_dict() for s in scores + pooled(scores)]
    return {
        **meta,
        "panel_fit_sha256": panel_fit(meta["models"]),
        "thresholds": list(THRESHOLDS),
        "trials": sum(len(r) for r in rows_by_seed.values()),
        "harness_trials": sum(r["harness"] for rows in rows_by_seed.values() for r in rows),
        "scores": all_scores,
        "over_seeds": over_seeds(all_scores),
        "planted_cells": sorted(planted_ids),
        "cell_passes": passes,
        "by_length": by_length(passes, planted_ids),
    }


def write_outputs(record: dict[str, Any], out: Path) -> None:
    """``screen_eval.json``, the report section ``screen_eval.md`` and ``screen_pr.png`` into ``out``."""
    from apiflow.analysis.screen_section import FIGURE, pr_plot, screen_eval_section
    from apiflow.analysis.writers import render_markdown

    (out / "screen_eval.json").write_text(json.dumps(record, indent=1) + "\n")
    pr_plot(record, out / f"{FIGURE}.png")
    (out / "screen_eval.md").write_text(
        render_markdown([screen_eval_section(record)], "apiflow bank screen-eval")
    )
