"""Transcript archives: the schema-1.0 JSONs of one batch of trials in one ZIP object.

A member is named as the trial's own file would be below ``transcripts/``
(``model=<m>/<trial_id>.json``) and holds the same bytes, stored (no compression), so
``unzip`` of a committed archive into ``transcripts/`` gives its trials' per-trial files back
(``apiflow transcripts unpack`` does it for every committed one: ``ResultStore.unpack_archives``). The
archive is a pure function of its members and their order: fixed timestamps, fixed permissions
(a re-sent batch writes the same bytes). Why one object per batch: docs/design/042,
"One transcript archive per batch (round three)".
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from typing import IO

from apiflow.errors import UsageError

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


def refuse_archive(path: str) -> None:
    """Raise for a grid's archive met by a reader of trial files outside the grid's own folder.

    Whether an archive counts depends on its grid's row objects, beside ``transcripts/``: reading its
    members blindly could show an uncommitted attempt, and skipping it would silently leave trials out.

    Raises:
        UsageError: ``path`` is a transcript archive (``is_archive_path``).
    """
    if not is_archive_path(path):
        return
    grid = path.replace("\\", "/").rsplit("/transcripts/batches/", 1)[0]
    raise UsageError(
        f"{path}: a grid's transcript archive (one batch's trials); point `apiflow view` or "
        f"`apiflow transcripts export` at the grid's folder ({grid}), which read committed archives, "
        f"or write them out as one file a trial with `apiflow transcripts unpack {grid}` and point at "
        "its transcripts/model=*/ folders"
    )


def committed(paths: Iterable[str], batch_rows: Iterable[str]) -> list[str]:
    """The archives among ``paths`` whose batch row object (same digest) is among ``batch_rows``, in path order.

    An archive without one was written by an attempt that died before committing: its trials ran
    again (in other batches, or alone) and are stored elsewhere.
    """
    digests = {_stem(p) for p in batch_rows}
    return sorted(p for p in paths if _stem(p) in digests)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def archive_bytes(members: Iterable[tuple[str, bytes]]) -> bytes:
    """A stored (uncompressed) ZIP of ``(name, bytes)`` members, in the order given.

    The bytes ``zipfile`` writes for the same members (``ZipInfo(name, (1980, 1, 1, 0, 0, 0))``, unix,
    mode 0644, ``writestr``: tests/results/test_archives.py holds the two equal), packed here in a few
    ``struct`` calls a member: ``zipfile``'s writer builds a writer object and writes each header twice,
    a large share of a batched trial's store (docs/results/042-result-store-measurements.md). Past the
    classic format's limits
    (4 GiB, 65,535 members) ``zipfile`` writes it, with its ZIP64 records.
    """
    members = list(members)
    out = io.BytesIO()
    central = []
    offset = 0
    for name, body in members:
        encoded, flags = _encoded(name)
        size, crc = len(body), zlib.crc32(body)
        if size > _LIMIT or offset > _LIMIT:
            return _zipfile_bytes(members)
        local = _LOCAL.pack(b"PK\x03\x04", _VERSION, 0, flags, zipfile.ZIP_STORED, _DOSTIME, _DOSDATE,
                            crc, size, size, len(encoded), 0)  # fmt: skip
        out.write(local)
        out.write(encoded)
        out.write(body)
        central.append(_CENTRAL.pack(b"PK\x01\x02", _VERSION, _UNIX, _VERSION, 0, flags, zipfile.ZIP_STORED,
                                     _DOSTIME, _DOSDATE, crc, size, size, len(encoded), 0, 0, 0, 0, _MODE, offset)
                       + encoded)  # fmt: skip
        offset += len(local) + len(encoded) + size
    directory = b"".join(central)
    if len(central) > 0xFFFF or offset > _LIMIT or offset + len(directory) > _LIMIT:
        return _zipfile_bytes(members)
    out.write(directory)
    out.write(_END.pack(b"PK\x05\x06", 0, 0, len(central), len(central), len(directory), offset, 0))
    return out.getvalue()


_LOCAL = struct.Struct("<4s2B4HL2L2H")  # zipfile.structFileHeader
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # zipfile.structCentralDir
_END = struct.Struct("<4s4H2LH")  # zipfile.structEndArchive
_VERSION = 20  # zipfile.DEFAULT_VERSION: what a stored member needs to be extracted
_UNIX = 3  # the "made by" system whose permissions ``_MODE`` is in
_DOSDATE = (_EPOCH[0] - 1980) << 9 | _EPOCH[1] << 5 | _EPOCH[2]
_DOSTIME = _EPOCH[3] << 11 | _EPOCH[4] << 5 | _EPOCH[5] // 2
_LIMIT = 0xFFFFFFFF - 1  # past it, sizes and offsets need ZIP64 records


def _encoded(name: str) -> tuple[bytes, int]:
    # As zipfile: an ASCII name as is, any other in UTF-8 with the language-encoding flag (bit 11).
    try:
        return name.encode("ascii"), 0
    except UnicodeEncodeError:
        return name.encode("utf-8"), 0x800


def _zipfile_bytes(members: Iterable[tuple[str, bytes]]) -> bytes:
    """``archive_bytes`` through ``zipfile`` (the reference the fast writer is held to)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, body in members:
            info = zipfile.ZipInfo(name, _EPOCH)
            info.create_system = _UNIX  # zipfile says 0 on Windows; the bytes must not depend on the OS
            info.external_attr = _MODE
            archive.writestr(info, body)
    return buffer.getvalue()


def member_names(archive: bytes | str | IO[bytes]) -> list[str]:
    """The members of an archive (its bytes, a local path or an open file), in archive order;
    only the central directory is read from a path or a file.

    Raises:
        zipfile.BadZipFile: ``archive`` is not a ZIP archive.
    """
    with zipfile.ZipFile(io.BytesIO(archive) if isinstance(archive, bytes) else archive) as opened:
        return opened.namelist()


def read_members(data: bytes, names: Iterable[str] | None = None) -> Iterator[tuple[str, bytes]]:
    """``(name, bytes)`` of the named members (all, in archive order, when ``names`` is None).

    Raises:
        zipfile.BadZipFile: ``data`` is not a ZIP archive, or a member is damaged (CRC mismatch).
        KeyError: A named member is not in the archive.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist() if names is None else names:
            yield name, archive.read(name)
