"""Where the viewer's trials come from: the trial JSONs under one RESULTS location.

RESULTS is what ``apiflow grid run`` writes (a local folder or ``s3://…``: ``manifest.json``,
``transcripts/``, ``failures/``…), a folder of schema-1.0 trial JSONs (``apiflow run --out``, the
published ``<model>/<task>-t<N>.json`` tree), or one trial file. Only the listing and the bytes
live here; parsing and rendering happen in the build's worker processes.

In a grid, a trial that failed in the harness and then succeeded has a transcript *and* failure
attempts: the transcript wins, and of several failed attempts of a never-finished trial the first
(in path order) is shown, as ``apiflow report`` counts them (``analysis.table.dedupe_trials``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec

from apiflow.errors import UsageError
from apiflow.results.store import MANIFEST

# Grid bookkeeping beside the trials: never trial records.
_GRID_METADATA = ("attempts", "ledger", "rows", "compacted")


@dataclass(frozen=True)
class TrialSource:
    """The trial JSON files of one RESULTS location, in display order."""

    url: str
    paths: tuple[str, ...]
    grid: bool  # a grid's result store (manifest.json at the root)
    fs: Any = None  # an fsspec filesystem for remote URLs; None for local paths

    def read_chunks(self, size: int) -> Iterator[list[tuple[str, bytes]]]:
        """``(path, bytes)`` of every file, ``size`` files at a time (remote reads batched)."""
        for start in range(0, len(self.paths), size):
            chunk = list(self.paths[start : start + size])
            if self.fs is None:
                yield [(p, Path(p).read_bytes()) for p in chunk]
            else:
                data = self.fs.cat(chunk, on_error="raise")
                yield [(p, data[p]) for p in chunk]


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
        files = [url] if local.is_file() else sorted(str(p) for p in local.rglob("*.json") if p.is_file())
    base = root.rstrip("/")
    grid = any(f == f"{base}/{MANIFEST}" for f in files)
    paths = _grid_trials(base, files) if grid else [f for f in files if _is_trial_name(base, f)]
    if not paths:
        raise UsageError(f"{url}: no trial JSON files in it")
    return TrialSource(url=url, paths=tuple(paths), grid=grid, fs=fs)


def _is_trial_name(base: str, path: str) -> bool:
    # Files and folders starting with "_" or "." are metadata (``_export_manifest.json``).
    parts = path[len(base) :].strip("/").split("/") if path != base else [Path(path).name]
    return path.endswith(".json") and not any(p.startswith(("_", ".")) for p in parts)


def _grid_trials(base: str, files: list[str]) -> list[str]:
    """Transcripts first, then one failed attempt per trial that has no transcript."""
    transcripts: list[str] = []
    failures: dict[str, str] = {}
    for path in files:
        if not _is_trial_name(base, path):
            continue
        parts = path[len(base) :].strip("/").split("/")
        if parts[0] == "transcripts":
            transcripts.append(path)
        elif parts[0] == "failures" and len(parts) == 4:  # failures/model=<m>/<trial_id>/<attempt>.json
            failures.setdefault(parts[2], path)
        elif parts[0] not in _GRID_METADATA and parts != [MANIFEST]:
            transcripts.append(path)
    done = {Path(p).stem for p in transcripts}
    return transcripts + [p for trial_id, p in sorted(failures.items()) if trial_id not in done]
