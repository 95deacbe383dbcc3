"""A small deterministic Nelder-Mead minimiser (scipy is not a dependency; the fit has 5 unknowns)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def nelder_mead(
    loss: Callable[[np.ndarray], float], start: np.ndarray, step: float = 0.5, iterations: int = 600
) -> np.ndarray:
    """Minimise ``loss`` from ``start`` (standard coefficients; no randomness, so a rerun on the same
    input returns the same point)."""
    n = len(start)
    simplex = [np.asarray(start, float)] + [start + step * np.eye(n)[i] for i in range(n)]
    values = [loss(x) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(values, kind="stable")
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < 1e-12:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        reflected = centroid + (centroid - simplex[-1])
        r = loss(reflected)
        if r < values[0]:
            expanded = centroid + 2.0 * (centroid - simplex[-1])
            e = loss(expanded)
            simplex[-1], values[-1] = (expanded, e) if e < r else (reflected, r)
        elif r < values[-2]:
            simplex[-1], values[-1] = reflected, r
        else:
            contracted = centroid + 0.5 * (simplex[-1] - centroid)
            c = loss(contracted)
            if c < values[-1]:
                simplex[-1], values[-1] = contracted, c
            else:  # shrink towards the best point
                simplex = [simplex[0]] + [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex[1:]]
                values = [values[0]] + [loss(x) for x in simplex[1:]]
    return simplex[int(np.argmin(values))]
