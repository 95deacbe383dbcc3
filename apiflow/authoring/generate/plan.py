"""The bank's shape and each world's storyline plan (axis and difficulty per subtask)."""

from __future__ import annotations

import random
from dataclasses import dataclass

AXIS_ORDER = (
    "authentication",
    "discovery",
    "schema_repair",
    "multistep",
    "error_recovery",
    "pagination",
    "statefulness",
)
FIRST_AXES = ("discovery", "authentication", "pagination", "error_recovery")
V1_SEED = 56


@dataclass(frozen=True, slots=True)
class WorldShape:
    """How many subtasks a world has and its longest chain."""

    subs: int
    max_chain: int


def bank_shape() -> list[WorldShape]:
    """The published shape: 11 x (20 subs, chains to 20), one (6, to 5), one (15, to 14)."""
    shapes = [WorldShape(20, 20) for _ in range(13)]
    shapes[5] = WorldShape(6, 5)
    shapes[12] = WorldShape(15, 14)
    return shapes


def storyline(rng: random.Random, subs: int) -> list[tuple[str, str]]:
    """Axis and difficulty per subtask: every axis in every storyline of 7+ steps, no axis twice in a row."""
    first = rng.choice(FIRST_AXES)
    axes = [first]
    pool: list[str] = []
    while len(axes) < subs:
        if not pool:
            pool = list(AXIS_ORDER)
            rng.shuffle(pool)
            if len(axes) == 1:
                pool.remove(first)
        choice = next((a for a in pool if a != axes[-1]), pool[0])
        pool.remove(choice)
        axes.append(choice)
    plan = []
    for k, axis in enumerate(axes, start=1):
        phase = (k - 1) / max(1, subs - 1)
        weights = (0.8 - 0.7 * phase, 0.5, 0.2 + 0.7 * phase)
        difficulty = rng.choices(("easy", "medium", "hard"), weights=weights)[0]
        plan.append((axis, difficulty))
    return plan
