"""Row files: trial rows as complete in-memory Parquet/Arrow files, and the few reads the store
makes of them (a batch object's trial ids, a row file's cost) — the encoding half of the store."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

from apiflow.results.rows import ROW_SCHEMA


def row_bytes(row: dict[str, Any], row_format: str = "parquet") -> bytes:
    """One trial row as a complete in-memory file (uploaded in one PUT, so never half-visible)."""
    return rows_bytes([row], row_format)


def rows_bytes(rows: Sequence[dict[str, Any]], row_format: str = "parquet") -> bytes:
    """Trial rows as one complete in-memory file (a trial's row, or a batch's rows)."""
    batch = pa.RecordBatch.from_pylist(list(rows), schema=ROW_SCHEMA)
    if row_format == "arrow":
        stream = pa.BufferOutputStream()
        with pa.ipc.new_file(stream, ROW_SCHEMA) as writer:
            writer.write_batch(batch)
        return stream.getvalue().to_pybytes()
    sink = pa.BufferOutputStream()
    # Few rows: compression, dictionaries and statistics cost more than they save (~2x faster write).
    with pq.ParquetWriter(
        sink, ROW_SCHEMA, compression="NONE", use_dictionary=False, write_statistics=False, store_schema=False
    ) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


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


def ids_in(data: bytes) -> list[str]:
    """The trial ids of one batch row object (only that column is decoded)."""
    # Row group by row group: ~6x cheaper than ``pq.read_table`` (no dataset machinery), which
    # is what a resume pays per batch object (bench/bench_growth.py).
    parquet = pq.ParquetFile(pa.BufferReader(data))
    return [
        str(v)
        for group in range(parquet.num_row_groups)
        for v in parquet.read_row_group(group, columns=["trial_id"]).column(0).to_pylist()
    ]


def row_cost(path: str, data: bytes) -> float:
    buffer = pa.BufferReader(data)
    if path.endswith(".arrow"):
        table = pyarrow.ipc.open_file(buffer).read_all().select(["cost_usd"])
    else:
        table = pq.read_table(buffer, columns=["cost_usd"], schema=ROW_SCHEMA)
    return float(sum(v for v in table.column("cost_usd").to_pylist() if v is not None))
