"""Replayed grades: a trial whose setup, tool calls and transcript are another trial's gets that
trial's grade instead of grading again.

Why it is exact. A grade is a pure function of the graded spec, the evidence and the rule set
(``apiflow.grading.grade``), and a live trial's evidence is a pure function of its workspace and its
messages (``evidence_from_workspace``). The workspace, in turn, is a pure function of the trial's
setup (the task, the world and the world, workspace and canary seeds) and of the ``(name,
arguments)`` of every call its toolbox ran, in order (``Toolbox.calls``, encoded when each ran:
``Toolbox.snapshots``): the world answers a request
by its history alone (docs/design/001), the workspace draws ids from its own seeded generator, and the
tools read no clock and never change the arguments they are handed. So two trials with the same
setup, the same calls and the same messages have equal evidence, and equal grades.
``tests/fuzz/test_evidence_fuzz.py`` states the workspace half of that with random call sequences;
``tests/agent/test_grades.py`` plays every offline model, adversary and calibrated sim with the memo
on and off and compares the records.

What is compared. The setup by identity (the task, the spec salted for the trial, which
``trial_salting`` hands every trial of a task and canary seed with its codec, and the world
definition, all held by the entry so an id is never matched to a newer object) and by value (the
seeds and the rule set); calls and messages by the sha256 of their exact pickle (``apiflow.exact``:
equal bytes only for equal values of the same types). A trial holding anything but exact built-in
data has no such pickle and is graded, not looked up.

What is shared. Nothing mutable: a hit is the first trial's ``Grade`` with a fresh ``verifier``
(unpickled from the exact bytes taken when it was graded), the one field the record keeps.

In a grid, the trials of one (task, epoch) share every seed, and the calibrated sims' trials often
repeat an earlier transcript there (docs/results/030-agent-loop-rounds.md, "Round seven"). Bounded:
the entries least recently used leave first. One memo serves one run of built-in offline models
(``apiflow.agent.replay``), whose calls the toolbox encodes as they run (``Toolbox.snapshots``).
"""

from __future__ import annotations

import dataclasses
import pickle
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Final, NamedTuple

from apiflow.exact import exact_bytes, exact_digest
from apiflow.grading import Grade

MAX_ENTRIES: Final = 2_048
"""Grades held at most: ~16 KB each at bank/v1's calibrated sims (tracemalloc; the grade's predicate
results, diagnostics and the verifier's bytes), ~34 MB at the most. A grid actor of the 44k grid files
~630 an epoch (its ~233 tasks, ~2.7 distinct transcripts each); an epoch's entries never come back."""


_FIELDS: Final = tuple(field.name for field in dataclasses.fields(Grade))
_GRADE: Final[Callable[..., Grade]] = Grade  # called with its fields in order (see _Entry)
_VERIFIER: Final = _FIELDS.index("verifier")


class _Entry(NamedTuple):
    held: tuple[Any, ...]  # the objects whose ids the key names, kept alive: their ids stay theirs
    before: tuple[Any, ...]  # the grade's fields before its verifier, in order (the verifier: below)
    after: tuple[Any, ...]  # and after it (Grade(*before, verifier, *after): half ``replace``'s cost)
    verifier: bytes  # exact_bytes(grade.verifier): each hit unpickles its own copy


class GradeMemo:
    """Grades by (setup, calls, messages); see the module docstring for why that is exact."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict[str, int]:
        """Hits, misses and entries so far (the grid's actors report them)."""
        return {"hits": self.hits, "misses": self.misses, "entries": len(self._entries)}

    def clear(self) -> None:
        self._entries.clear()
        self.hits = self.misses = 0

    @staticmethod
    def key(held: tuple[Any, ...], values: tuple[Hashable, ...], played: Any) -> Hashable | None:
        """The key of a trial: ``held`` by identity, ``values`` (the seeds, the rule set) by value,
        ``played`` (the calls and messages) by the digest of its exact encoding; None when ``played``
        holds a value that is not an exact built-in one (then the trial is graded, not looked up)."""
        digest = exact_digest(played)
        if digest is None:
            return None
        return (*map(id, held), *values, digest)

    def get(self, key: Hashable) -> Grade | None:
        """The grade filed under ``key``, with a verifier of its own.

        The ids in a key name the very objects it was filed with: the entry holds them, so no other
        object can take one of those ids while the entry lives.
        """
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return _GRADE(*entry.before, pickle.loads(entry.verifier), *entry.after)

    def put(self, key: Hashable, held: tuple[Any, ...], grade: Grade) -> None:
        """File ``grade`` (unless its verifier holds a value that is not an exact built-in one)."""
        verifier = exact_bytes(grade.verifier)
        if verifier is None:
            return
        fields = tuple(getattr(grade, name) for name in _FIELDS)
        self._entries[key] = _Entry(held, fields[:_VERIFIER], fields[_VERIFIER + 1 :], verifier)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
