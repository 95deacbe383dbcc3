"""The trials a driver has yet to send, each on the shelf of the actor that is its task's home.

An actor keeps per-task work between trials: the task's compiled script and literals, a
calibrated sim's verdict on it, the canary forms of its worlds, and the replayed world answers of
its (task, epoch)s (``apiflow.world.transitions``). When every actor gets every task, each pays that
first-sight work once per task; when a task's trials go to one actor, the cluster pays it once
(measured in docs/results/040-grid-runner-measurements.md, "Task homes"). So each task has a home actor: tasks are dealt to the
actors in the order they first appear in the run order, which balances them when tasks have equal
trial counts, as a grid's do. An actor takes from its own shelf, in run order; one whose shelf is
empty takes from the front of the fullest other shelf, so no actor idles while work is left (a
dead actor's shelf is emptied that way too) and the run order, fair when cut, still holds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator

from cluster.plan import PlannedTrial


class WorkQueue:
    """Unsent trials on one shelf per actor; ``len`` counts them all."""

    def __init__(self, trials: Iterable[PlannedTrial], actors: int) -> None:
        if actors < 1:
            raise ValueError("a work queue needs at least one actor")
        self.shelves: list[deque[PlannedTrial]] = [deque() for _ in range(actors)]
        self._homes: dict[str, int] = {}
        for trial in trials:
            self._shelf(trial).append(trial)

    def __len__(self) -> int:
        return sum(map(len, self.shelves))

    def __bool__(self) -> bool:
        return any(self.shelves)

    def home(self, task_id: str) -> int:
        """The actor index a task's trials go to first (dealt in order of first appearance)."""
        index = self._homes.get(task_id)
        if index is None:
            index = self._homes[task_id] = len(self._homes) % len(self.shelves)
        return index

    def _shelf(self, trial: PlannedTrial) -> deque[PlannedTrial]:
        return self.shelves[self.home(trial.task_id)]

    def shelf_for(self, actor: int) -> deque[PlannedTrial] | None:
        """The shelf ``actor`` takes from next: its own, else the fullest other; None when all are empty."""
        own = self.shelves[actor]
        if own:
            return own
        fullest = max(self.shelves, key=len)
        return fullest or None

    def peek(self, actor: int) -> PlannedTrial | None:
        """The trial ``actor`` would take next (None when nothing is left)."""
        shelf = self.shelf_for(actor)
        return shelf[0] if shelf else None

    def take(self, shelf: deque[PlannedTrial]) -> PlannedTrial:
        """Remove and return the front trial of ``shelf`` (one of ``self.shelves``)."""
        return shelf.popleft()

    def appendleft(self, trial: PlannedTrial) -> None:
        """Put a trial back at the front of its home shelf (a dead actor's batch: finish what was started first)."""
        self._shelf(trial).appendleft(trial)

    def remove(self, drop: Callable[[PlannedTrial], bool]) -> int:
        """Take every unsent trial ``drop`` picks off the shelves; how many."""
        removed = 0
        for shelf in self.shelves:
            kept = [t for t in shelf if not drop(t)]
            removed += len(shelf) - len(kept)
            shelf.clear()
            shelf.extend(kept)
        return removed

    def __iter__(self) -> Iterator[PlannedTrial]:
        for shelf in self.shelves:
            yield from shelf
