"""Load the trial table behind a report from whatever the user points at.

An input is a Parquet file, a folder (local or ``s3://``) of Parquet files — our grid writes one
row file per trial plus compacted per-model files, so rows are de-duplicated by ``trial_id`` —
or a folder of schema-1.0 trial JSONs from ``apiflow run`` (flattened on the fly). A grid's folder
(``manifest.json`` at its root) is read through its result store: every row object checked, a
damaged one set aside and named on stderr, Arrow rows included (docs/design/042).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import fsspec
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from apiflow.analysis.ingest import find_trial_files, iter_chunk_tables
from apiflow.analysis.rows import transcript_row
from apiflow.errors import UsageError
from apiflow.results.store import ResultStore


def load_table(inputs: Sequence[str], storage_options: dict | None = None) -> pa.Table:
    """All rows of all inputs, one table, duplicates (same ``trial_id``) removed.

    ``s3://`` inputs use ``storage_options`` (fsspec), else the usual AWS environment.

    Raises:
        UsageError: an input is missing, empty or not readable as trial rows.
    """
    if not inputs:
        raise UsageError("no input given")
    tables = [_load_one(str(source), storage_options or {}) for source in inputs]
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
    if table.num_rows == 0:
        raise UsageError(f"no trial rows in {', '.join(map(str, inputs))}")
    return dedupe_trials(table)


def dedupe_trials(table: pa.Table) -> pa.Table:
    """One row per ``trial_id``: the first real outcome, else the first harness outcome.

    A grid stores a trial's row once per copy (per-trial file, compacted file) and a harness
    failure per failed attempt; a trial retried successfully is its successful row, a trial that
    never got past the harness stays one (unscored) harness outcome. Rows without a trial id
    (published rows mixed in) are all kept. Kept rows stay in input order.
    """
    if "trial_id" not in table.column_names or table["trial_id"].null_count == table.num_rows:
        return table
    ids = np.asarray(pc.fill_null(table["trial_id"], "").to_numpy(zero_copy_only=False), dtype=object)
    harness = np.zeros(table.num_rows, dtype=bool)
    if "harness" in table.column_names and not pa.types.is_null(table["harness"].type):
        harness = np.asarray(pc.fill_null(table["harness"], False).to_numpy(zero_copy_only=False), dtype=bool)
    order = np.lexsort((np.arange(table.num_rows), harness))  # real outcomes first, then input order
    _, first = np.unique(ids[order].astype(str), return_index=True)
    keep = np.zeros(table.num_rows, dtype=bool)
    keep[order[first]] = True
    keep |= ids == ""
    if keep.all():
        return table
    return table.filter(pa.array(keep))


def _load_one(source: str, storage_options: dict) -> pa.Table:
    if "://" in source:
        fs, path = fsspec.core.url_to_fs(source, **storage_options)
    else:
        fs, path = None, source
        if not Path(source).exists():
            raise UsageError(f"{source}: no such file or directory")
    if _is_file(fs, path):
        if path.endswith(".parquet"):
            return _read_parquet(fs, [path])
        if path.endswith(".json"):
            return _read_json(fs, [path])
        raise UsageError(f"{source}: expected a .parquet file, a .json trial or a folder of them")
    parquet, json, grid = _list_files(fs, path)
    if grid:
        return _read_grid(source, storage_options)
    if parquet:
        return _read_parquet(fs, parquet)
    if json:
        return _read_json(fs, json)
    raise UsageError(f"{source}: no .parquet or trial .json files in it")


def _is_file(fs, path: str) -> bool:
    return Path(path).is_file() if fs is None else fs.isfile(path)


def _list_files(fs, path: str) -> tuple[list[str], list[str], bool]:
    """The folder's Parquet files, its JSON files, and whether it is a grid's result store
    (``manifest.json`` at its root beside stored rows)."""
    if fs is None:
        files = [str(p) for p in sorted(Path(path).rglob("*")) if p.is_file()]
    else:
        files = sorted(fs.find(path))
    base = str(Path(path)) if fs is None else path.rstrip("/")
    rows = tuple(f"{base}/{folder}/" for folder in ("rows", "compacted", "failures"))
    grid = f"{base}/manifest.json" in files and any(f.startswith(rows) for f in files)
    visible = [f for f in files if not Path(f).name.startswith(("_", "."))]
    return [f for f in visible if f.endswith(".parquet")], [f for f in visible if f.endswith(".json")], grid


def _read_grid(source: str, storage_options: dict) -> pa.Table:
    """A grid's stored rows and failed attempts (``dedupe_trials`` keeps a real outcome first)."""
    store = ResultStore(source, storage_options or None)
    return pa.concat_tables([store.read_rows(), store.read_rows(failures=True)])


def _read_parquet(fs, files: list[str]) -> pa.Table:
    tables = []
    for f in files:
        try:
            tables.append(pq.read_table(f, filesystem=fs, partitioning=None))
        except (OSError, pa.ArrowInvalid) as exc:
            raise UsageError(f"{f}: not a readable Parquet file ({exc})") from None
    return pa.concat_tables(tables, promote_options="permissive")


def _read_json(fs, files: list[str]) -> pa.Table:
    if fs is None:
        paths = find_trial_files(files)
        tables = [t for t, _ in iter_chunk_tables(paths, strict=False) if t.num_rows]
        if not tables:
            raise UsageError(f"no schema-1.0 trial JSON among {len(paths)} JSON files")
        return pa.concat_tables(tables, promote_options="permissive")
    rows = []
    for f in files:
        try:
            trial = orjson.loads(fs.cat_file(f))
            if isinstance(trial, dict) and "schema_version" not in trial:
                continue  # a manifest beside the trials
            rows.append(transcript_row(trial))
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{f}: not a schema-1.0 trial JSON ({exc})") from None
    return pa.Table.from_pylist(rows)
