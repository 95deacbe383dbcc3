"""Row files: trial rows as complete, sealed in-memory Parquet/Arrow files, and the one checked read
the store makes of them (``read_table``: some columns of a row object, and its footer metadata) —
the encoding half of the store. Every read goes through ``integrity``: a damaged object raises
``Damaged``, never a pyarrow error (docs/design/042, "Damaged objects")."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from apiflow.results.integrity import Damaged, open_arrow, open_parquet, sealed_arrow, sealed_parquet, short
from apiflow.results.rows import ROW_SCHEMA

BATCH_IDS = "apiflow.batch"
"""Footer metadata of a batch object: the batch's trial ids as sent, sorted, one a line (its name's digest)."""
ARCHIVE_SIZE = "apiflow.archive_size"
"""Footer metadata of a batch object: the size of the transcript archive written just before it."""
_FEW_ROWS = {"compression": "NONE", "use_dictionary": False, "write_statistics": False, "store_schema": False}
# Few rows: compression, dictionaries and statistics cost more than they save (~2x faster write).


def row_bytes(row: dict[str, Any], row_format: str = "parquet") -> bytes:
    """One trial row as a complete in-memory file (uploaded in one PUT, so never half-visible)."""
    return rows_bytes([row], row_format)


def rows_bytes(
    rows: Sequence[dict[str, Any]], row_format: str = "parquet", metadata: dict[str, str] | None = None
) -> bytes:
    """Trial rows as one complete, sealed in-memory file (a trial's row, or a batch's rows)."""
    batch = pa.RecordBatch.from_pylist(list(rows), schema=ROW_SCHEMA)
    if row_format == "arrow":
        return sealed_arrow(batch, metadata)
    return sealed_parquet(pa.Table.from_batches([batch]), metadata, **_FEW_ROWS)


def table_bytes(table: pa.Table) -> bytes:
    """Many rows (a compacted file) as one sealed Parquet file, compressed."""
    return sealed_parquet(table)


def batch_digest(trial_ids: Iterable[str]) -> str:
    """The key of a batch's row object: sha256 of its sorted trial ids (order-free, so a batch
    re-sent after its actor died, or checked by the driver, names the same object)."""
    return hashlib.sha256("\n".join(sorted(trial_ids)).encode()).hexdigest()[:32]


def dedupe(table: pa.Table) -> pa.Table:
    """Keep the first row of each trial id."""
    first: dict[str, int] = {}
    for index, trial_id in enumerate(table.column("trial_id").to_pylist()):
        first.setdefault(trial_id, index)
    if len(first) == table.num_rows:
        return table
    return table.take(sorted(first.values()))


def read_table(path: str, data: bytes, columns: list[str] | None = None) -> tuple[pa.Table, dict[str, str]]:
    """The rows of one row object (``columns`` of them), checked, in ``ROW_SCHEMA``, and its footer metadata.

    Raises:
        Damaged: The object fails its checksum, cannot be parsed, or holds no ``trial_id`` column.
    """
    fields = [ROW_SCHEMA.field(c) for c in columns] if columns is not None else list(ROW_SCHEMA)
    try:
        if path.endswith(".arrow"):
            reader = open_arrow(data)
            table, meta = reader.read_all(), reader.metadata or {}
        else:
            parquet = open_parquet(data)
            # Row group by row group: ~6x cheaper than ``pq.read_table`` (no dataset machinery), which is
            # what a resume pays per batch object (bench/bench_growth.py).
            stored = parquet.schema_arrow
            names = [f.name for f in fields if stored.get_field_index(f.name) >= 0]
            groups = [parquet.read_row_group(g, columns=names) for g in range(parquet.num_row_groups)]
            table = pa.concat_tables(groups) if groups else stored.empty_table().select(names)
            meta = parquet.metadata.metadata or {}
        if "trial_id" not in table.column_names:
            raise Damaged("no trial_id column")
        schema = pa.schema(fields)
        if table.schema.equals(schema):  # every row file this code writes: no cast, no copy
            conformed = table.replace_schema_metadata(None)
        else:
            conformed = pa.Table.from_arrays([_column(table, field) for field in fields], schema=schema)
        info = {k.decode(): v.decode() for k, v in meta.items() if not k.startswith(b"ARROW:")}
    except Damaged:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:  # a footer that parsed, pages that do not
        raise Damaged(f"unreadable rows ({short(exc)})") from None
    return conformed, info


def _column(table: pa.Table, field: pa.Field) -> pa.ChunkedArray:
    # As a dataset read with ``ROW_SCHEMA`` does: a column a row file lacks is null, others are cast.
    if field.name not in table.column_names:
        return pa.chunked_array([pa.nulls(table.num_rows, field.type)], field.type)
    return table.column(field.name).cast(field.type)
