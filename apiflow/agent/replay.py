"""Replay: world answers and grades shared by the trials of one run, for the runs it is sound for.

The trials of one (task, epoch) share every seed, so an offline model that plays a path another
trial played gets the world's answers (``apiflow.world.transitions``) and, when its whole transcript
repeats, the grade (``apiflow.agent.grades``) without working them out again. That is exact only
while every model of the run is deterministic code of ours that cannot touch what was keyed after the
fact: the built-in ``apiflow/...`` models. A provider model almost never repeats a trial, so replay
would only cost it memory and a key per trial; a plug-in or external agent is untrusted code. So a
runner builds one ``Replay`` for a run whose models are all built-in (``replay_for``) and passes it
to every trial; any other run plays without one, and nothing is shared between runs or processes
through module state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from apiflow.agent.grades import GradeMemo
from apiflow.models.registry import is_offline
from apiflow.tools.execute import ShownMemo
from apiflow.world.transitions import TransitionMemo


@dataclass(eq=False)
class Replay:
    """The two memos of one run: world answers and grades (each bounded)."""

    transitions: TransitionMemo = field(default_factory=TransitionMemo)
    grades: GradeMemo = field(default_factory=GradeMemo)
    shown: ShownMemo = field(default_factory=ShownMemo)
    """How the replayed responses are shown in execute results (one text per response object)."""

    def stats(self) -> dict[str, dict[str, int]]:
        """Hits, misses and sizes of both memos (a grid actor reports them)."""
        return {"transitions": self.transitions.stats(), "grades": self.grades.stats()}


def replays(models: Iterable[str]) -> bool:
    """True when replay is sound for a run of these models: every one is a built-in offline model."""
    names = list(models)
    return bool(names) and all(is_offline(name) for name in names)


def replay_for(models: Iterable[str]) -> Replay | None:
    """A fresh ``Replay`` for a run of ``models``, or None when replay is not sound for them."""
    return Replay() if replays(models) else None
