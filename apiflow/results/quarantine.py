"""Where a reader puts a damaged object: aside, under ``quarantine/``, never deleted, named on stderr.

A reader of the store that meets an object failing its checksum or its parse moves it to
``quarantine/<its path>`` (``.1``, ``.2``… when that name is taken), so the next reader does not
meet it again, a resume runs its trials again, and a person can still look at it. Nothing is
overwritten and nothing is deleted; a store this process may not write (read-only credentials, a
shared folder) keeps the object in place and every reader skips it again. Each move is one line on
stderr naming the object, and is kept in ``Quarantine.found`` for callers and tests.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from apiflow.results.objects import ObjectFolder

PREFIX = "quarantine"
"""The folder below the store's root that damaged objects are moved into (readers never list it)."""


@dataclass(frozen=True)
class Quarantined:
    """One object a reader set aside: where it was, where it is now (None: not moved), and why."""

    path: str
    moved_to: str | None
    reason: str


class Quarantine:
    """Moves objects of one store aside and reports each.

    Args:
        objects: The store's objects.
        url: The store's URL, to name objects as the user knows them.
    """

    def __init__(self, objects: ObjectFolder, url: str) -> None:
        self.objects = objects
        self.url = url.rstrip("/")
        self.found: list[Quarantined] = []

    def name(self, path: str) -> str:
        """``path`` as the user knows it: the store's URL and the object's place below it."""
        return f"{self.url}/{self.relative(path)}"

    def relative(self, path: str) -> str:
        """``path`` below the store's root (a local path may be given relative to the working folder)."""
        root = self.objects.root
        if self.objects.local:
            path, root = os.path.abspath(path), os.path.abspath(root)
        return path[len(root) :].lstrip("/")

    def move(self, path: str, reason: str, outcome: str) -> Quarantined:
        """Move the object at ``path`` under ``quarantine/`` and say so on stderr.

        Args:
            path: The object's full path.
            reason: Why: what is wrong with it (or with the object it belongs with).
            outcome: What follows for its trials, for the message.
        """
        base = self.objects.path(PREFIX, self.relative(path))
        moved_to = None
        try:
            for attempt in range(1000):
                target = f"{base}.{attempt}" if attempt else base
                if self.objects.move(path, target):
                    moved_to = target
                    break
            where = f"moved to {self.name(moved_to)}" if moved_to else "left in place (no free name)"
        except FileNotFoundError:
            where = "already moved aside by another reader"
        except OSError as exc:  # a read-only store: the object stays, readers keep skipping it
            where = f"left in place: could not move it aside ({type(exc).__name__}: {exc})"
        print(f"apiflow: {self.name(path)}: {reason}; {where}; {outcome}", file=sys.stderr)
        found = Quarantined(path=path, moved_to=moved_to, reason=reason)
        self.found.append(found)
        return found
