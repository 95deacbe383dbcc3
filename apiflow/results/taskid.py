"""Task ids: ``<bank>-wNN-subMM`` (solo step MM of world NN) and ``<bank>-wNN-chain-1toKK``.

Parsed generically so that the published bank (``v56``), the sample bank (``sample``) and
ours (``v1``) all work; the bank prefix may itself contain dashes. A task id comes from a bank or a
trial record, both untrusted data, and ends up in file and member names (viewer pages, Inspect
``samples/<id>_epoch_<n>.json``): one without a path separator, ``..`` or a control character
is a single safe name wherever it lands (``check_task_id``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from apiflow.errors import UsageError

TaskKind = Literal["solo", "chain"]

_TASK_ID = re.compile(r"(?P<bank>.+)-(?P<world>w\d+)-(?:sub(?P<sub>\d+)|chain-1to(?P<k>\d+))")


@dataclass(frozen=True)
class TaskRef:
    """What a task id says: bank prefix, world, kind and length (solo: the step number)."""

    bank: str
    world: str
    kind: TaskKind
    length: int


def check_task_id(task_id: str) -> str:
    """``task_id`` unchanged when it is one safe name: no ``/``, ``\\``, ``..`` or control character.

    Raises:
        UsageError: it holds one of them (named in the message).
    """
    if "/" in task_id or "\\" in task_id:
        why = "a path separator"
    elif ".." in task_id:
        why = "'..'"
    elif not task_id.isprintable():  # NUL, newlines, every other control or unassigned character
        why = "a control (or other unprintable) character"
    else:
        return task_id
    raise UsageError(
        f"task id {task_id!r} holds {why}; a task id is one name (no /, \\, .. or control characters)"
    )


@lru_cache(maxsize=65536)
def parse_task_id(task_id: str) -> TaskRef:
    """Split a task id into bank, world, kind and length.

    For a solo task ``length`` is its step number (as in the published table), for a chain
    the number of steps K it spans.

    Raises:
        UsageError: the id matches neither shape, or is no safe name (``check_task_id``).
    """
    match = _TASK_ID.fullmatch(check_task_id(task_id))
    if match is None:
        raise UsageError(f"task id {task_id!r} is neither <bank>-wNN-subMM nor <bank>-wNN-chain-1toKK")
    if match["sub"] is not None:
        return TaskRef(match["bank"], match["world"], "solo", int(match["sub"]))
    return TaskRef(match["bank"], match["world"], "chain", int(match["k"]))


def solo_task_id(bank: str, world: str, step: int) -> str:
    """The id of solo step ``step`` of ``world`` (zero-padded to two digits, as published)."""
    return f"{bank}-{world}-sub{step:02d}"
