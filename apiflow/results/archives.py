"""Transcript archives: the schema-1.0 JSONs of one batch of trials in one ZIP object.

A member is named as the trial's own file would be below ``transcripts/``
(``model=<m>/<trial_id>.json``) and holds the same bytes, stored (no compression), so
``unzip`` of every committed archive into ``transcripts/`` gives the per-trial layout back. The
archive is a pure function of its members and their order: fixed timestamps, fixed permissions
(a re-sent batch writes the same bytes). Why one object per batch: docs/design/042, "Round three".
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator

SUFFIX = ".zip"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a ZIP can hold: no wall clock in the bytes
_MODE = 0o644 << 16  # unix permissions in the high half, as unzip reads them


def member_name(model_token: str, trial_id: str) -> str:
    """The member of a trial: its path below ``transcripts/`` in the per-trial layout."""
    return f"model={model_token}/{trial_id}.json"


def trial_id_of(member: str) -> str:
    """The trial id a member holds (its file stem)."""
    return member.rsplit("/", 1)[-1].removesuffix(".json")


def is_archive_path(path: str) -> bool:
    """True for a grid's transcript archive (``…/transcripts/batches/<digest>.zip``)."""
    parts = path.replace("\\", "/").split("/")
    return path.endswith(SUFFIX) and len(parts) >= 3 and parts[-2] == "batches" and parts[-3] == "transcripts"


def refuse_archive(path: str) -> str:
    """The error for a reader of trial files that meets an archive outside a grid's own folder.

    Whether an archive counts depends on its grid's row objects, beside ``transcripts/``: reading its
    members blindly could show an uncommitted attempt, and skipping it would silently leave trials out.
    """
    grid = path.replace("\\", "/").rsplit("/transcripts/batches/", 1)[0]
    return (
        f"{path}: a grid's transcript archive (one batch's trials); point `apiflow view` or "
        f"`apiflow transcripts export` at the grid's folder ({grid}), which read committed archives, "
        "or unzip them into a folder first"
    )


def archive_bytes(members: Iterable[tuple[str, bytes]]) -> bytes:
    """A stored (uncompressed) ZIP of ``(name, bytes)`` members, in the order given."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, body in members:
            info = zipfile.ZipInfo(name, _EPOCH)
            info.external_attr = _MODE
            archive.writestr(info, body)
    return buffer.getvalue()


def member_names(data: bytes) -> list[str]:
    """The members of an archive, in archive order.

    Raises:
        zipfile.BadZipFile: ``data`` is not a ZIP archive.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.namelist()


def read_members(data: bytes, names: Iterable[str] | None = None) -> Iterator[tuple[str, bytes]]:
    """``(name, bytes)`` of the named members (all, in archive order, when ``names`` is None).

    Raises:
        zipfile.BadZipFile: ``data`` is not a ZIP archive, or a member is damaged (CRC mismatch).
        KeyError: A named member is not in the archive.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist() if names is None else names:
            yield name, archive.read(name)
