"""Where the members of a transcript archive may be written: strictly inside the folder they unpack into.

An archive is data a grid's folder holds, and a folder can be shared, copied or handed over: a
member named ``../../x`` or ``/etc/x`` (or a symbolic link) must not write outside it
(``apiflow transcripts unpack``). Each member's target is checked by the path a write would
really reach, resolved (``..``, and locally every symbolic link on the way), never by looking
at the name's text; ``\\`` counts as a separator everywhere, so an archive unpacks to the same
places on every system. Every member of an archive is checked before any of it is written.
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
import zipfile
from types import ModuleType

from apiflow.errors import UsageError
from apiflow.results.objects import ObjectFolder


def unpack_targets(folder: ObjectFolder, base: str, data: bytes, archive: str) -> list[tuple[str, bytes]]:
    """``(target path, bytes)`` of each member of the archive ``data``, in archive order.

    Args:
        folder: The objects the targets are written to (local folder or object store).
        base: The full path of the folder the members unpack into (``transcripts/``).
        data: The archive's bytes.
        archive: The archive's path, named in an error.

    Raises:
        UsageError: a member would be written outside ``base`` (or at it), is a symbolic link or
            a folder entry, or needs a file to be a folder; one line naming the member. Nothing
            of the archive has been written.
        zipfile.BadZipFile: ``data`` is not a ZIP archive, or a member is damaged.
    """
    paths: ModuleType = os.path if folder.local else posixpath
    resolve = paths.realpath if folder.local else paths.normpath
    root = resolve(base)
    planned: list[tuple[str, zipfile.ZipInfo]] = []
    with zipfile.ZipFile(io.BytesIO(data)) as opened:
        for info in opened.infolist():
            # paths.join: an absolute name replaces the root, and so resolves outside it.
            target = resolve(paths.join(root, info.filename.replace("\\", "/")))
            why = _refusal(info) or _outside(paths, root, target)
            if why is None and folder.local:
                why = _blocked(root, target)
            if why is not None:
                raise UsageError(
                    f"{archive}: member {info.filename!r} {why}; nothing of this archive was written"
                )
            planned.append((target, info))
        _refuse_file_above(paths, root, planned, archive)
        return [(target, opened.read(info)) for target, info in planned]


def _refusal(info: zipfile.ZipInfo) -> str | None:
    if stat.S_ISLNK(info.external_attr >> 16):
        return "is a symbolic link"
    if info.filename.endswith("/"):  # ZipInfo.is_dir fails on an empty name
        return "is a folder entry, not a trial's file"
    return None


def _outside(paths: ModuleType, root: str, target: str) -> str | None:
    try:
        inside = target != root and paths.commonpath([root, target]) == root
    except ValueError:  # another drive, or a relative path against an absolute one
        inside = False
    return None if inside else "would be written outside the folder it unpacks into"


def _above(paths: ModuleType, root: str, target: str) -> list[str]:
    """The folders between ``root`` and ``target`` (both resolved, ``target`` inside ``root``)."""
    found = []
    parent = paths.dirname(target)
    while parent != root and len(parent) > len(root):
        found.append(parent)
        parent = paths.dirname(parent)
    return found


def _blocked(root: str, target: str) -> str | None:
    """Why the local file system cannot take a file at ``target``: a folder there, a file above."""
    if os.path.isdir(target):
        return "names a folder"
    for parent in _above(os.path, root, target):
        if os.path.lexists(parent) and not os.path.isdir(parent):
            return f"needs {parent} to be a folder, and it is a file"
    return None


def _refuse_file_above(
    paths: ModuleType, root: str, planned: list[tuple[str, zipfile.ZipInfo]], archive: str
) -> None:
    """Refuse an archive one of whose members lies below another (``a`` and ``a/b``)."""
    files = {target: info.filename for target, info in planned}
    for target, info in planned:
        for parent in _above(paths, root, target):
            if parent in files:
                raise UsageError(
                    f"{archive}: member {info.filename!r} needs member {files[parent]!r} to be a folder; "
                    "nothing of this archive was written"
                )
