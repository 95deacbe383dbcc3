"""Plant underspecified chain cells: a mid-chain step's required detail dropped from the chain prompt.

This is how the cell screen is evaluated (``apiflow bank screen-eval``, docs/design/071). The
paper diagnosed its zero-pass cells as chains whose compressed prompt lost a detail a mid-chain
step needs while the grader still checks that step. A planted cell reproduces exactly that: the
prompt of chain 1..K omits the words that pick step j's entity among look-alikes (2 <= j < K),
the golden path, predicates and world stay as they are, and the generator verifies that taking a
look-alike instead really fails the chain (the grader check stays). Which cells were planted is
ground truth written beside the bank, never into it: no model or prompt can see it.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from apiflow.authoring.gates.harness import card_message, golden_calls, run_script
from apiflow.authoring.generate.draft import Detail, Draft
from apiflow.bank.task import Task
from apiflow.world import WorldDef


@dataclass(frozen=True, slots=True)
class PlantedCell:
    """One planted chain: its id, the step whose detail was dropped, and the words dropped."""

    task_id: str
    world: str
    length: int
    segment: int
    dropped: str  # the words, without their leading space

    def as_dict(self) -> dict[str, Any]:
        """JSON form for the side file."""
        return asdict(self)


def candidates(drafts: list[Draft], lengths: list[int], rng: random.Random) -> list[tuple[int, int]]:
    """(chain length K, mid-chain step j) pairs whose step j has a droppable detail, in a seeded order.

    Chain lengths come in a shuffled order, each with its steps shuffled, so a planted cell is as
    likely a short chain as a long one (drawing (K, j) pairs uniformly would favour long chains,
    which have more mid-chain steps).
    """
    found = []
    ks = list(lengths)
    rng.shuffle(ks)
    for k in ks:
        steps = [j for j in range(2, k) if drafts[j - 1].detail is not None]
        rng.shuffle(steps)
        found += [(k, j) for j in steps]
    return found


def blurred(drafts: list[Draft], j: int) -> list[Draft]:
    """``drafts`` with step j's goal stripped of its detail (the goal an underspecified chain compresses)."""
    out = list(drafts)
    detail = out[j - 1].detail
    assert detail is not None and detail.phrase in out[j - 1].goal
    out[j - 1] = replace(out[j - 1], goal=out[j - 1].goal.replace(detail.phrase, "", 1))
    return out


def detail_is_graded(task: Task, world: WorldDef, detail: Detail, j: int) -> bool:
    """True when the chain fails if the agent takes the look-alike instead of step j's entity.

    The golden path with ``detail.live`` replaced by ``detail.wrong`` from segment j on is
    replayed and graded with the right card: a pass would mean the dropped words decide nothing
    the grader checks, so the cell would not be underspecified.
    """
    calls = golden_calls(task, replace=(detail.live, detail.wrong), segments=set(range(j, task.length + 1)))
    _, graded = run_script(task, world, calls, card_message(task.expected_card))
    return not graded.passed


def side_file(out: Path) -> Path:
    """Where the planted cells of the bank at ``out`` are recorded: beside the folder, not in it."""
    return out.parent / f"{out.name}.planted.json"


def write_side_file(out: Path, manifest: dict[str, Any], per_world: int, cells: list[PlantedCell]) -> Path:
    """Record the ground truth of a planted bank (its hash ties the record to the bank's bytes)."""
    path = side_file(out)
    record = {
        "bank": manifest["bank"],
        "bank_hash": manifest["hash"],
        "per_world": per_world,
        "cells": [c.as_dict() for c in cells],
    }
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def read_side_file(out: Path) -> dict[str, Any]:
    """The planted-cell record of the bank at ``out`` (raises OSError/ValueError when absent or broken)."""
    data = json.loads(side_file(out).read_text())
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError(f"{side_file(out)} is not a planted-cell record")
    return data
