"""Random JSON-like values and the outcome of encoding them: for tests that hold a fast encoder
to ``json.dumps`` (the same text, or the same error, for any value)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any


def random_value(rng: random.Random, leaves: Sequence[Any], keys: Sequence[Any], depth: int = 0) -> Any:
    """A nest of dicts and lists up to five deep, with leaves and keys drawn from the given ones."""
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return rng.choice(leaves)
    if roll < 0.65:
        return {
            rng.choice(keys): random_value(rng, leaves, keys, depth + 1) for _ in range(rng.randint(0, 4))
        }
    return [random_value(rng, leaves, keys, depth + 1) for _ in range(rng.randint(0, 4))]


def outcome(fn: Callable[[Any], Any], value: Any) -> tuple[Any, ...]:
    """``("ok", result)``, or ``("error", type, message)``: two encoders agree only if both match."""
    try:
        return ("ok", fn(value))
    except Exception as exc:
        return ("error", type(exc), str(exc))
