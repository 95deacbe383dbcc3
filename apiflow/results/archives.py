"""Transcript archives: the schema-1.0 JSONs of one batch of trials in one ZIP object.

A member is named as the trial's own file would be below ``transcripts/``
(``model=<m>/<trial_id>.json``) and holds the same bytes, stored (no compression), so
``unzip`` of a committed archive into ``transcripts/`` gives its trials' per-trial files back
(``apiflow transcripts unpack`` does it for every committed one: ``ResultStore.unpack_archives``). The
archive is a pure function of its members and their order: fixed timestamps, fixed permissions
(a re-sent batch writes the same bytes). Why one object per batch: docs/design/042,
"One transcript archive per batch (round three)".

An archive is sealed: its ZIP comment holds the sha256 of its members' names, sizes and CRC-32s,
so the directory is checked by the digest and every member's bytes by their CRC-32 as it is read
(``check_archive``); hashing the directory, not every byte, keeps sealing cheap on the write path.
"""

from __future__ import annotations

import hashlib
import io
import struct
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from typing import IO

from apiflow.errors import UsageError
from apiflow.results.integrity import Damaged, short

SUFFIX = ".zip"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a ZIP can hold: no wall clock in the bytes
_MODE = 0o644 << 16  # unix permissions in the high half, as unzip reads them
SEAL = b"apiflow.sha256="
"""How a sealed archive's comment starts (the hex digest of ``_listing`` follows)."""


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


def committed(paths: Iterable[str], batches: Iterable[str]) -> list[str]:
    """The archives among ``paths`` whose batch (same digest) is among ``batches``, in path order.

    ``batches`` are the committed batches' row objects (paths or names): those in ``rows/batches/``
    and those a compaction folded in (``compacted/_batches.json``), whose rows live on in the
    compacted files whatever becomes of their objects. An archive of no committed batch was written
    by an attempt that died before committing: its trials ran again and are stored elsewhere.
    """
    digests = {_stem(p) for p in batches}
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
    listing = []
    offset = 0
    for name, body in members:
        encoded, flags = _encoded(name)
        size, crc = len(body), zlib.crc32(body)
        listing.append((name, size, crc))
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
    seal = _seal(listing)
    out.write(_END.pack(b"PK\x05\x06", 0, 0, len(central), len(central), len(directory), offset, len(seal)))
    out.write(seal)
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
        archive.comment = _seal((i.filename, i.file_size, i.CRC) for i in archive.infolist())
    return buffer.getvalue()


def _seal(listing: Iterable[tuple[str, int, int]]) -> bytes:
    """The comment of an archive of these ``(name, size, crc32)`` members, in archive order."""
    text = "".join(f"{name}\0{size}\0{crc}\n" for name, size, crc in listing)
    return SEAL + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest().encode()


def check_archive(data: bytes) -> list[str]:
    """An archive's member names, after checking it whole: its seal (when it has one: archives
    written before sealing have none) and every member's CRC-32.

    Raises:
        Damaged: Empty, not a ZIP archive (garbage, truncated), a seal that does not match its
            directory, or a member whose bytes do not match their CRC-32.
    """
    if not data:
        raise Damaged("empty")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as opened:
            infos = opened.infolist()
            if opened.comment.startswith(SEAL) and opened.comment != _seal(
                (i.filename, i.file_size, i.CRC) for i in infos
            ):
                raise Damaged("checksum mismatch (its seal does not match its members)")
            for info in infos:
                try:
                    opened.read(info)  # checks the member's CRC-32 and its local header
                except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                    raise Damaged(f"member {info.filename} is damaged ({short(exc)})") from None
    except Damaged:
        raise
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise Damaged(f"not a whole ZIP archive ({short(exc)})") from None
    return [i.filename for i in infos]


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
