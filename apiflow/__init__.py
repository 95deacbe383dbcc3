"""apiflow: do LLM agents survive long, dependent REST-API workflows?

For notebooks: ``apiflow.run_task``, ``apiflow.run_trials`` and ``apiflow.run_grid`` return a
pyarrow Table of trial rows (``apiflow.api``); they are loaded on first use, so ``import apiflow``
(and the CLI) stays as light as before.
"""

from typing import Any

from apiflow.version import __version__

__all__ = ["__version__", "run_task", "run_trials", "run_grid", "load_grid_rows"]

_API = ("run_task", "run_trials", "run_grid", "load_grid_rows")


def __getattr__(name: str) -> Any:
    if name in _API:
        from apiflow import api

        return getattr(api, name)
    raise AttributeError(f"module 'apiflow' has no attribute {name!r}")
