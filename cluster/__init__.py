"""Grids on Ray: planning, trial-worker actors, rate limits, retries, the budget ledger, the driver.

Ray lives here only; ``apiflow`` never imports this package (docs/design/040-grid-runner.md).
"""

from cluster.plan import PlannedTrial, plan_grid, remaining, run_order
from cluster.spec import GridModel, GridSpec, load_grid

__all__ = ["GridModel", "GridSpec", "PlannedTrial", "load_grid", "plan_grid", "remaining", "run_order"]
