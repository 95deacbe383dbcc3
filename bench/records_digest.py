"""The digest of a fixed set of trial records: a speed-up that changes a record is a bug.

Plays, in one process and in a fixed order:
  * the sample bank: every task x every offline model (``OFFLINE_MODELS`` and the adversaries) x 2 epochs;
  * ``bank/v1``: every task x the oracle, ``sim:erratic`` and ``sim:weak`` x 1 epoch;
  * ``bank/v1``: the first 40 tasks x 3 calibrated sims x 1 epoch;
graded, each record as ``TrialRecord.to_json()`` with its two wall-time fields
(``duration_s``, ``provenance.created``) blanked. Prints one sha256 per group and one over all;
``--out FILE`` also writes one line per trial (``group task model epoch sha256``) so two runs can
be diffed to the trial that changed.

    python bench/records_digest.py [--out FILE] [--quick] [--replay both|on|off]

By default each group is played twice, without replay and with one run's replay
(``apiflow.agent.replay``), and the two must give the same records.

Run it before and after a change to the world, tools, loop, offline models or grader; the
digests must match. ``--quick`` plays a tenth of each group (a smoke check, not the proof).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from apiflow.agent import TrialSpec, trial_seed
from apiflow.agent.replay import Replay
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import OFFLINE_MODELS, make_model
from apiflow.models.adversarial import ADVERSARY_MODELS
from apiflow.models.calibrated import calibrated_panel
from apiflow.models.registry import model_slug
from apiflow.runner import play_trial_sync


def _blank_wall_time(text: str) -> str:
    data = json.loads(text)
    data["duration_s"] = 0
    data["provenance"]["created"] = ""
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def _groups(quick: bool) -> list[tuple[str, Path, list[str], int, int | None]]:
    """(name, bank dir, models, epochs, task cap)."""
    v1 = DEFAULT_BANK.parent / "v1"
    cut = 10 if quick else 1
    return [
        ("sample", DEFAULT_BANK, [*OFFLINE_MODELS, *ADVERSARY_MODELS], 2, None if not quick else 3),
        (
            "v1",
            v1,
            ["apiflow/oracle", "apiflow/sim:erratic", "apiflow/sim:weak"],
            1,
            None if cut == 1 else 47,
        ),
        ("v1-calibrated", v1, list(calibrated_panel()[:3]), 1, 40 // cut),
    ]


def _play(quick: bool, replay: Replay | None) -> tuple[list[str], list[str]]:
    """(printed lines, per-trial lines) of one pass over every group."""
    printed: list[str] = []
    lines: list[str] = []
    total = hashlib.sha256()
    for name, bank_dir, models, epochs, cap in _groups(quick):
        bank = load_bank(bank_dir)
        tasks = sorted(bank.tasks.values(), key=lambda t: t.id)[:cap]
        group = hashlib.sha256()
        n = 0
        for task in tasks:
            world = bank.world_of(task)
            for name_ in models:
                for epoch in range(1, epochs + 1):
                    model = make_model(name_, task, trial_seed(0, task.id, epoch))
                    record = play_trial_sync(
                        TrialSpec(
                            task=task,
                            world=world,
                            seed=0,
                            epoch=epoch,
                            bank_name=bank.name,
                            bank_hash=bank.hash,
                            run_id="digest",
                            model_slug=model_slug(name_),
                        ),
                        model,
                        replay=replay,
                    )
                    digest = hashlib.sha256(_blank_wall_time(record.to_json()).encode()).hexdigest()
                    group.update(digest.encode())
                    lines.append(f"{name} {task.id} {name_} {epoch} {digest}")
                    n += 1
        total.update(group.hexdigest().encode())
        printed.append(f"{name:14s} {n:6d} trials  {group.hexdigest()}")
    printed.append(f"{'all':14s} {len(lines):6d} trials  {total.hexdigest()}")
    return printed, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write one line per trial to FILE")
    parser.add_argument("--quick", action="store_true", help="a tenth of each group (smoke check)")
    parser.add_argument(
        "--replay", choices=("both", "on", "off"), default="both",
        help="play with one run's replay (on), without (off), or both and compare (default)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    passes = {"on": ("on",), "off": ("off",), "both": ("off", "on")}[args.replay]
    seen: dict[str, list[str]] = {}
    for mode in passes:
        printed, lines = _play(args.quick, Replay() if mode == "on" else None)
        print(f"replay {mode}:")
        print("\n".join("  " + line for line in printed))
        seen[mode] = lines
    if args.out:
        args.out.write_text("\n".join(seen[passes[-1]]) + "\n")
    if len(seen) == 2 and seen["on"] != seen["off"]:
        changed = sum(a != b for a, b in zip(seen["on"], seen["off"], strict=True))
        print(f"replay on and off differ in {changed} trial(s)")
        return 1
    if len(seen) == 2:
        print("replay on and off: the same records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
