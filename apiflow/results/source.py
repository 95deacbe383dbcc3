"""Where the viewer's trials come from: the trial JSONs under one RESULTS location.

RESULTS is what ``apiflow grid run`` writes (a local folder or ``s3://…``: ``manifest.json``,
``transcripts/``, ``failures/``…), a folder of schema-1.0 trial JSONs (``apiflow run --out``, the
published ``<model>/<task>-t<N>.json`` tree), or one trial file. Only the listing and the bytes
live here; parsing and rendering happen in the build's worker processes.

In a grid, a trial that failed in the harness and then succeeded has a transcript *and* failure
attempts: the transcript wins, and of several failed attempts of a never-finished trial the first
(in path order) is shown, as ``apiflow report`` counts them (``analysis.table.dedupe_trials``).
A grid's batches keep their transcripts in one archive each (``transcripts/batches/<digest>.zip``,
``apiflow.results.archives``): the members of every committed archive (its batch row object exists)
are listed as ``<archive>/<member>`` paths and read from the archive; a trial stored twice (two
attempts that both committed) is shown once, the first in path order. A grid's trial files and
archives are checked as they are read (``ResultStore.checked_trial_file``, ``archives.check_archive``):
a damaged one is set aside with its trials (``ResultStore.transcript_damaged``) and left out.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec

from apiflow.errors import UsageError
from apiflow.results import archives
from apiflow.results.integrity import Damaged
from apiflow.results.layout import BATCHES, MANIFEST
from apiflow.results.quarantine import PREFIX as QUARANTINE
from apiflow.results.store import ResultStore

# Grid bookkeeping beside the trials, and objects set aside as damaged: never trial records.
_GRID_METADATA = ("attempts", "ledger", "rows", "compacted", QUARANTINE)


@dataclass(frozen=True)
class TrialSource:
    """The trial JSON files of one RESULTS location, in display order."""

    url: str
    paths: tuple[str, ...]
    grid: bool  # a grid's result store (manifest.json at the root)
    fs: Any = None  # an fsspec filesystem for remote URLs; None for local paths
    members: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Path -> (archive, member name) for the paths that are members of a transcript archive."""
    store: ResultStore | None = None
    """A grid's store: its trial files and archives are checked as read, damaged ones set aside."""

    def read_chunks(self, size: int) -> Iterator[list[tuple[str, bytes]]]:
        """``(path, bytes)`` of every trial, ``size`` at a time (remote reads batched); in a grid,
        a damaged file or archive is left out (set aside and named on stderr)."""
        whole: dict[str, bool] = {}  # archive -> checked whole (each is checked once)
        for start in range(0, len(self.paths), size):
            chunk = list(self.paths[start : start + size])
            data = self._read_files([p for p in chunk if p not in self.members])
            wanted: dict[str, list[str]] = {}
            for path in chunk:
                if path in self.members:
                    archive, name = self.members[path]
                    wanted.setdefault(archive, []).append(name)
            for archive, names in wanted.items():  # one read per archive a chunk touches
                blob = self._read_files([archive]).get(archive)
                if blob is not None and self._whole(archive, blob, whole):
                    data.update((f"{archive}/{n}", body) for n, body in archives.read_members(blob, names))
            yield [(p, data[p]) for p in chunk if p in data]

    def _whole(self, archive: str, blob: bytes, whole: dict[str, bool]) -> bool:
        if archive not in whole:
            try:
                archives.check_archive(blob)
                whole[archive] = True
            except Damaged as exc:  # damaged since the grid wrote it, or since it was listed
                if self.store is None:
                    raise UsageError(f"{archive}: a damaged transcript archive ({exc})") from None
                self.store.transcript_damaged(archive, str(exc))
                whole[archive] = False
        return whole[archive]

    def _read_files(self, paths: list[str]) -> dict[str, bytes]:
        if not paths:
            return {}
        if self.fs is None:
            data = {}
            for path in paths:
                try:
                    data[path] = Path(path).read_bytes()
                except FileNotFoundError:
                    if self.store is None:
                        raise
                    # set aside since it was listed (by another reader)
        else:
            data = self.fs.cat(paths, on_error="raise" if self.store is None else "omit")
        if self.store is None:
            return {p: data[p] for p in paths}
        return {p: data[p] for p in paths if p in data and self._trial_file_whole(p, data[p])}

    def _trial_file_whole(self, path: str, data: bytes) -> bool:
        assert self.store is not None
        if not path.endswith(".json") or self.store.quarantine.relative(path).split("/")[0] not in (
            "transcripts",
            "failures",
        ):
            return True  # an archive, or a JSON beside the trials (checked where it is parsed)
        try:
            self.store.checked_trial_file(path, data)
        except Damaged as exc:
            self.store.transcript_damaged(path, str(exc))
            return False
        return True


def open_source(url: str, storage_options: dict[str, Any] | None = None) -> TrialSource:
    """List the trial files under ``url``.

    Raises:
        UsageError: the location does not exist or holds no JSON files.
    """
    if "://" in url:
        fs, root = fsspec.core.url_to_fs(url, **(storage_options or {}))
        fs.invalidate_cache()
        if not fs.exists(root):
            raise UsageError(f"{url}: no such file or folder")
        files = [root] if fs.isfile(root) else sorted(fs.find(root))
    else:
        fs, root = None, url
        local = Path(url)
        if not local.exists():
            raise UsageError(f"{url}: no such file or directory")
        files = [url] if local.is_file() else sorted(str(p) for p in local.rglob("*") if p.is_file())
    base = root.rstrip("/")
    grid = any(f == f"{base}/{MANIFEST}" for f in files)
    members: dict[str, tuple[str, str]] = {}
    store = None
    if grid:
        store = ResultStore(url, storage_options)
        members = _archive_members(base, files, fs, store)
        paths = _grid_trials(base, files, list(members))
    else:
        for path in files:
            archives.refuse_archive(path)
        paths = [f for f in files if _is_trial_name(base, f)]
    if not paths:
        raise UsageError(f"{url}: no trial JSON files in it")
    return TrialSource(url=url, paths=tuple(paths), grid=grid, fs=fs, members=members, store=store)


def _is_trial_name(base: str, path: str) -> bool:
    # Files and folders starting with "_" or "." are metadata (``_export_manifest.json``).
    parts = path[len(base) :].strip("/").split("/") if path != base else [Path(path).name]
    return path.endswith(".json") and not any(p.startswith(("_", ".")) for p in parts)


def _archive_members(base: str, files: list[str], fs: Any, store: ResultStore) -> dict[str, tuple[str, str]]:
    """The members of every committed transcript archive (its batch row object exists, or a
    compaction folded it in): ``<archive>/<member>`` -> (archive, member). Only the directory of
    each is read here; one whose directory is unreadable is set aside with its batch."""
    found = [
        f for f in files if f.startswith(f"{base}/transcripts/{BATCHES}/") and f.endswith(archives.SUFFIX)
    ]
    batch_rows = [f for f in files if f.startswith(f"{base}/rows/{BATCHES}/") and f.endswith(".parquet")]
    members: dict[str, tuple[str, str]] = {}
    for archive in archives.committed(found, [*batch_rows, *store.stored.covered()]):
        try:
            if fs is None:
                names = archives.member_names(archive)
            else:
                with fs.open(archive, "rb") as handle:
                    names = archives.member_names(handle)
        except FileNotFoundError:
            continue  # set aside since it was listed
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            store.transcript_damaged(archive, f"not a whole ZIP archive ({exc})")
            continue
        members.update((f"{archive}/{name}", (archive, name)) for name in names)
    return members


def _grid_trials(base: str, files: list[str], members: list[str]) -> list[str]:
    """Transcripts first (each trial once, the first in path order), then one failed attempt per
    trial that has no transcript."""
    transcripts: list[str] = []
    failures: dict[str, str] = {}
    for path in sorted([*files, *members]):
        if not _is_trial_name(base, path):
            continue
        parts = path[len(base) :].strip("/").split("/")
        if parts[0] == "transcripts":
            transcripts.append(path)
        elif parts[0] == "failures" and len(parts) == 4:  # failures/model=<m>/<trial_id>/<attempt>.json
            failures.setdefault(parts[2], path)
        elif parts[0] not in _GRID_METADATA and parts != [MANIFEST]:
            transcripts.append(path)
    done: set[str] = set()
    unique = []
    for path in transcripts:
        if Path(path).stem not in done:
            done.add(Path(path).stem)
            unique.append(path)
    return unique + [p for trial_id, p in sorted(failures.items()) if trial_id not in done]
