"""``apiflow transcripts ingest``: a tree of schema-1.0 trial JSONs -> one flat Parquet table.

Streaming: the file list is cut into chunks, each chunk is parsed (orjson) and flattened by a
worker process, and its rows are appended to the Parquet file in file order while at most a
few chunks are in flight — memory stays flat however large the corpus is.

Inspect ``.eval`` logs written by ``apiflow transcripts export`` are read too: each sample gives
back its trial record (``apiflow.interop``), chunked by sample like files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from apiflow.analysis.rows import OURS_SCHEMA, PUBLISHED_SCHEMA, transcript_row
from apiflow.errors import UsageError
from apiflow.interop.evalzip import read_samples, sample_members
from apiflow.interop.samples import sample_to_record
from apiflow.results import archives

CHUNK_FILES = 256
ROW_GROUP_ROWS = 65536
_TRIAL_FILE = re.compile(r"^(?P<task>.+)-t(?P<trial>\d+)\.json$")
_TRIAL_ENDINGS = (".json", ".eval")


@dataclass(frozen=True)
class EvalChunk:
    """Some samples of one exported Inspect ``.eval`` log: the unit a worker reads and flattens."""

    path: Path
    members: tuple[str, ...]


@dataclass(frozen=True)
class IngestStats:
    """What one ingest did: files read, bytes read and rows written."""

    files: int
    bytes: int
    rows: int


def _sort_key(path: Path) -> tuple[str, str, int, str]:
    # Published layout <model>/<task>-t<N>.json: order by (model, task, trial) like the published
    # table; anything else falls back to its path.
    match = _TRIAL_FILE.match(path.name)
    if match:
        return (path.parent.name, match["task"], int(match["trial"]), str(path))
    return (path.parent.name, path.stem, 0, str(path))


def find_trial_files(roots: Sequence[str | Path]) -> list[Path]:
    """Every ``*.json`` trial file and ``*.eval`` log under the roots (recursively; files starting
    with ``_`` are metadata such as ``_export_manifest.json`` and are skipped), in table order.

    Raises:
        UsageError: a root does not exist, or holds a grid's transcript archive (never skipped silently).
    """
    found: list[Path] = []
    for root in roots:
        root = Path(root)
        if root.is_file():
            found.append(root)
            continue
        if not root.is_dir():
            raise UsageError(f"{root}: no such file or directory")
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                archives.refuse_archive(os.path.join(dirpath, name))
            found.extend(
                Path(dirpath) / f
                for f in filenames
                if f.endswith(_TRIAL_ENDINGS) and not f.startswith(("_", "."))
            )
    return sorted(found, key=_sort_key)


def rows_of_files(paths: Iterable[Path], strict: bool = True) -> list[dict]:
    """Parse and flatten trial files in order.

    Args:
        paths: trial JSON files.
        strict: a JSON object without ``schema_version`` (a run manifest beside the trials) is an
            error; with ``strict=False`` it is skipped.

    Raises:
        UsageError: a file is not a schema-1.0 trial JSON.
    """
    rows = []
    for path in paths:
        try:
            trial = orjson.loads(path.read_bytes())
            if not strict and isinstance(trial, dict) and "schema_version" not in trial:
                continue
            if not isinstance(trial, dict) or trial.get("schema_version") != "1.0":
                raise ValueError("not a schema-1.0 trial (schema_version missing or not '1.0')")
            rows.append(transcript_row(trial))
        except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as exc:
            raise UsageError(f"{path}: {exc}") from None
    return rows


def rows_of_eval(chunk: EvalChunk) -> list[dict]:
    """Flatten some samples of an exported ``.eval`` log back into trial rows.

    Raises:
        UsageError: a sample does not carry the record the export writes.
    """
    rows = []
    for sample in read_samples(chunk.path, list(chunk.members)):
        try:
            rows.append(transcript_row(sample_to_record(sample)))
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{chunk.path}: {exc}") from None
    return rows


Chunk = list[Path] | EvalChunk


def _chunk_table(chunk: Chunk, strict: bool = True) -> tuple[pa.Table, int]:
    if isinstance(chunk, EvalChunk):
        rows = rows_of_eval(chunk)
        nbytes = 0  # a log's bytes are counted once, by _chunks
    else:
        rows = rows_of_files(chunk, strict)
        nbytes = sum(p.stat().st_size for p in chunk)
    ours = any("trial_id" in r for r in rows)
    return pa.Table.from_pylist(rows, schema=OURS_SCHEMA if ours else PUBLISHED_SCHEMA), nbytes


def _chunks(paths: list[Path], size: int) -> Iterator[Chunk]:
    # Runs of JSON files are cut every ``size`` files; a ``.eval`` log every ``size`` samples.
    files: list[Path] = []
    for path in paths:
        if path.suffix != ".eval":
            files.append(path)
            if len(files) == size:
                yield files
                files = []
            continue
        if files:
            yield files
            files = []
        members = sample_members(path)
        for start in range(0, len(members), size):
            yield EvalChunk(path, tuple(members[start : start + size]))
    if files:
        yield files


def iter_chunk_tables(
    paths: list[Path], workers: int = 0, chunk_files: int = CHUNK_FILES, strict: bool = True
) -> Iterator[tuple[pa.Table, int]]:
    """Flattened chunks in file order, parsed by ``workers`` processes (0: all cores; 1: in-process)."""
    workers = workers or os.cpu_count() or 1
    if workers == 1 or (len(paths) <= chunk_files and not any(p.suffix == ".eval" for p in paths)):
        for chunk in _chunks(paths, chunk_files):
            yield _chunk_table(chunk, strict)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending: list[Future[Any]] = []
        for chunk in _chunks(paths, chunk_files):
            pending.append(pool.submit(_chunk_table, chunk, strict))
            if len(pending) >= 2 * workers:  # bounded window: memory stays flat
                yield pending.pop(0).result()
        for future in pending:
            yield future.result()


def ingest(
    roots: Sequence[str | Path], out: str | Path, workers: int = 0, chunk_files: int = CHUNK_FILES
) -> IngestStats:
    """Write one Parquet table with a row per trial file under ``roots``.

    Published trees give exactly the published table's 24 columns; a tree of our own
    records gives those plus our harness-accounting columns. An exported ``.eval`` log gives
    the rows of the records it was exported from.

    Raises:
        UsageError: no trial files, a bad file, or published and own records mixed.
    """
    paths = find_trial_files(roots)
    if not paths:
        raise UsageError(f"no trial JSON files under {', '.join(map(str, roots))}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    writer: pq.ParquetWriter | None = None
    buffered: list[pa.Table] = []
    files = rows = 0
    nbytes = sum(p.stat().st_size for p in paths if p.suffix == ".eval")  # chunks count JSON bytes only
    try:
        for table, chunk_bytes in iter_chunk_tables(paths, workers, chunk_files):
            if writer is None:
                writer = pq.ParquetWriter(out, table.schema)
            elif table.schema != writer.schema:
                raise UsageError("published and apiflow trial records are mixed; ingest them separately")
            buffered.append(table)
            files += table.num_rows
            nbytes += chunk_bytes
            if sum(t.num_rows for t in buffered) >= ROW_GROUP_ROWS:
                rows += _flush(writer, buffered)
        if writer is not None:
            rows += _flush(writer, buffered)
    finally:
        if writer is not None:
            writer.close()
    return IngestStats(files=files, bytes=nbytes, rows=rows)


def _flush(writer: pq.ParquetWriter, buffered: list[pa.Table]) -> int:
    if not buffered:
        return 0
    table = pa.concat_tables(buffered)
    writer.write_table(table)
    buffered.clear()
    return table.num_rows
