"""A process pool whose workers each keep the run's ``Replay`` (runs of offline models split into
worker processes: panel check and stability, screen-eval).

A pool's worker serves one run from its start to its end, so the run's trials that land in the same
worker share world answers and grades as trials in one process do. The worker's ``Replay`` is made
by the pool's initializer; ``in_worker`` hands it to the function each task calls as its last
argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from apiflow.agent.heap import settle_loaded
from apiflow.agent.replay import Replay, replay_for

T = TypeVar("T")

_worker_replay: Replay | None = None  # this worker process's, set once by ``_start_worker``


def replay_pool(
    jobs: int, models: Sequence[str], *, preload: Callable[[], object] | None = None
) -> ProcessPoolExecutor:
    """``jobs`` worker processes, each with its own ``Replay`` for a run of ``models``.

    A worker is a process of its own: its initializer calls ``preload`` (loading what every task
    reads, the bank) and then takes what is loaded out of the collector's walks (``settle_loaded``).
    ``preload`` must pickle (a module-level function or a ``functools.partial`` of one).
    """
    return ProcessPoolExecutor(
        max_workers=jobs, initializer=_start_worker, initargs=(tuple(models), preload)
    )


def in_worker(play: Callable[..., T], *args: Any) -> T:
    """``play(*args, replay)`` with this worker's ``Replay`` (submit it: ``pool.submit(in_worker, f, ...)``)."""
    return play(*args, _worker_replay)


def _start_worker(models: tuple[str, ...], preload: Callable[[], object] | None) -> None:
    global _worker_replay
    _worker_replay = replay_for(models)
    if preload is not None:
        preload()
    settle_loaded()
