"""Checked objects: row files sealed with a sha256 of their data in their own footer; trial JSONs parsed.

A stored object is verifiable without a second object: the writer hashes every byte before the
file's footer (Parquet: the column chunks after the leading ``PAR1``; Arrow IPC: the schema and
record batches after the leading ``ARROW1``) and puts the digest in the footer's key-value
metadata under ``apiflow.sha256``; a reader hashes the same bytes again and parses the footer.
So garbage, a truncated or an emptied object, or a flipped byte in its data, is ``Damaged``, on a
local folder and on S3 alike (the object's bytes are all there is), and other Parquet/Arrow
readers still read the file as it is. An object written before sealing has no digest: it is
checked by parsing it, as it always was read. Transcript archives carry theirs in the ZIP
comment (``archives``). Why and what readers do then: docs/design/042, "Damaged objects".
"""

from __future__ import annotations

import hashlib
import io
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

CHECKSUM = "apiflow.sha256"
"""The footer metadata key of a sealed object's digest (hex sha256 of the bytes before its footer)."""
_PARQUET = b"PAR1"
_ARROW = b"ARROW1"
_ARROW_HEAD = 8  # "ARROW1" and two bytes of padding


class Damaged(ValueError):
    """An object that fails its checksum or cannot be parsed (the message says which, in a few words)."""


def sealed_parquet(table: pa.Table, metadata: dict[str, str] | None = None, **options: Any) -> bytes:
    """``table`` as one complete Parquet file whose footer holds the sha256 of its column chunks.

    Args:
        table: The rows (one or more row groups).
        metadata: More footer key-value metadata (the batch's ids, its archive's size).
        options: ``pq.ParquetWriter`` options (compression, dictionaries, statistics...).
    """
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, table.schema, **options) as writer:
        writer.write_table(table)  # each row group is complete in ``sink`` once written
        digest = hashlib.sha256(sink.getbuffer()[len(_PARQUET) : sink.tell()]).hexdigest()
        writer.add_key_value_metadata({**(metadata or {}), CHECKSUM: digest})
    return sink.getvalue()


def sealed_arrow(batch: pa.RecordBatch, metadata: dict[str, str] | None = None) -> bytes:
    """``batch`` as one complete Arrow IPC file whose footer holds the sha256 of what precedes it.

    The footer's metadata is fixed when the writer opens, so the file is written twice: the bytes
    before the footer do not depend on it (checked), and a row is small.
    """
    plain = _arrow_file(batch, metadata)
    digest = hashlib.sha256(plain[_ARROW_HEAD : _arrow_footer(plain)]).hexdigest()
    sealed = _arrow_file(batch, {**(metadata or {}), CHECKSUM: digest})
    if sealed[: _arrow_footer(sealed)] != plain[: _arrow_footer(plain)]:
        raise AssertionError("an Arrow IPC file's body depended on its footer metadata")
    return sealed


def _arrow_file(batch: pa.RecordBatch, metadata: dict[str, str] | None) -> bytes:
    stream = pa.BufferOutputStream()
    with pa.ipc.new_file(stream, batch.schema, metadata=metadata) as writer:
        writer.write_batch(batch)
    return bytes(stream.getvalue().to_pybytes())


def _arrow_footer(data: bytes) -> int:
    """Where an Arrow IPC file's footer starts (its length is the int32 before the closing magic)."""
    return len(data) - len(_ARROW) - 4 - int.from_bytes(data[-len(_ARROW) - 4 : -len(_ARROW)], "little")


def open_parquet(data: bytes) -> pq.ParquetFile:
    """A Parquet object, checked: its footer parses and, when sealed, its digest matches.

    Raises:
        Damaged: Not a whole Parquet file, or its column chunks changed since it was written.
    """
    if len(data) < 12 or data[:4] != _PARQUET or data[-4:] != _PARQUET:
        raise Damaged("empty" if not data else "not a whole Parquet file")
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise Damaged(f"unreadable Parquet footer ({short(exc)})") from None
    expected = (parquet.metadata.metadata or {}).get(CHECKSUM.encode())
    if expected is not None:
        footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
        _compare(hashlib.sha256(memoryview(data)[len(_PARQUET) : footer]).hexdigest(), expected)
    return parquet


def open_arrow(data: bytes) -> pa.ipc.RecordBatchFileReader:
    """An Arrow IPC object, checked as ``open_parquet`` checks a Parquet one.

    Raises:
        Damaged: Not a whole Arrow IPC file, or its body changed since it was written.
    """
    if len(data) < 2 * _ARROW_HEAD + 4 or data[:6] != _ARROW or data[-6:] != _ARROW:
        raise Damaged("empty" if not data else "not a whole Arrow IPC file")
    try:
        reader = pa.ipc.open_file(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise Damaged(f"unreadable Arrow IPC footer ({short(exc)})") from None
    expected = (reader.metadata or {}).get(CHECKSUM.encode())
    if expected is not None:
        _compare(hashlib.sha256(memoryview(data)[_ARROW_HEAD : _arrow_footer(data)]).hexdigest(), expected)
    return reader


def check_transcript(data: bytes) -> dict[str, Any]:
    """A stored trial JSON (transcript or failed attempt), checked: whole, and a JSON object.

    Its bytes are schema-1.0 JSON fixed by the published format, so it carries no digest: a
    truncated, emptied or garbage file fails to parse. The caller checks whose trial it is.

    Raises:
        Damaged: Empty, not JSON, or not a JSON object.
    """
    try:
        trial = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise Damaged("empty" if not data else f"not whole JSON ({short(exc)})") from None
    if not isinstance(trial, dict):
        raise Damaged("not a JSON object")
    return trial


def trial_id_of(trial: dict[str, Any]) -> str | None:
    """The trial id a stored trial JSON names (``apiflow.trial_id``), if it has one."""
    block = trial.get("apiflow")
    value = block.get("trial_id") if isinstance(block, dict) else None
    return value if isinstance(value, str) else None


def _compare(actual: str, expected: bytes) -> None:
    if actual.encode() != expected:
        raise Damaged("checksum mismatch (sha256 of its data differs from the one it was written with)")


def short(exc: BaseException) -> str:
    """The first line of an error's message, cut short (for a one-line report)."""
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
