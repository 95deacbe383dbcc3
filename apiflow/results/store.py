"""The result store: one create-only object per trial, through fsspec.

Layout under the output URL (a local folder or ``s3://bucket/prefix``; both go
through fsspec and behave alike)::

    manifest.json                               run manifest, written first, create-only
    attempts/<run_id>.json                      one per driver invocation (resume history)
    rows/model=<m>/<trial_id>.parquet           one-row Parquet, create-only: the commit point of a trial
                                                run alone (``.arrow`` with ``row_format="arrow"``: same row)
    rows/batches/<digest>.parquet               the rows of one batch of offline trials, create-only: the
                                                commit point of every trial in it; ``digest`` = sha256 of the
                                                batch's sorted trial ids, so a re-sent batch hits the same key
    transcripts/model=<m>/<trial_id>.json       the schema-1.0 trial JSON of a trial run alone, written just
                                                before its row
    transcripts/batches/<digest>.zip            the JSONs of one batch's committed trials (members named as
                                                above, same bytes), written just before its batch row object;
                                                counts only once that object exists (``archives``)
    failures/model=<m>/<trial_id>/<run_id>-<digest>.parquet  harness/provider outcomes, one per attempt
                                                (never block a resume; their spend counts toward the budget)
    ledger/<attempt>.json                       the budget ledger's last checkpoint of one driver attempt
    compacted/model=<m>.parquet                 per-model merge written by ``compact``
    compacted/_batches.json                     the batch objects that merge holds (``done_ids`` skips them)

The object primitives (create-only, atomic overwrite, concurrent reads, listings) are
``objects.ObjectFolder``'s; this module holds the layout and what a stored trial means.
An existing row object means "already done": that is how resume and duplicate
protection work, so every writer may race and exactly one row survives; readers keep
the first row of each trial id (docs/design/042-result-store.md, "Batched rows").
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.ipc
import pyarrow.parquet as pq

from apiflow.errors import UsageError
from apiflow.results import archives
from apiflow.results.objects import ObjectFolder
from apiflow.results.record import TrialRecord
from apiflow.results.rowfiles import batch_digest, dedupe, ids_in, row_bytes, row_cost, rows_bytes
from apiflow.results.rows import ROW_SCHEMA
from apiflow.results.unpack import unpack_targets

MANIFEST = "manifest.json"
_ROW_ENDINGS = (".parquet", ".arrow")
COVERED = "compacted/_batches.json"
"""The batch objects the last ``compact`` folded into the per-model files (``_``: not a row file)."""
BATCHES = "batches"
"""``rows/batches/``: batch row objects (one model token never equals it: tokens are ``model=…``)."""


def model_token(model_slug: str) -> str:
    """A path-safe, collision-free directory token for a model slug (slugs hold ``/`` and ``:``)."""
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", model_slug)
    return f"{readable}-{hashlib.sha256(model_slug.encode()).hexdigest()[:8]}"


ROW_SUFFIXES = {"parquet": ".parquet", "arrow": ".arrow"}
"""Per-trial row formats. Parquet is the default; Arrow IPC is far cheaper to write
(docs/results/042-result-store-measurements.md). Compacted files are always Parquet; readers accept
both."""


@dataclass(frozen=True)
class CompactSummary:
    """What ``compact`` did: rows read, distinct trials written, per-model files."""

    rows_read: int
    trials: int
    files: tuple[str, ...]


class ResultStore:
    """Trial results under one output URL.

    Args:
        url: Local folder or ``s3://bucket/prefix``.
        storage_options: Passed to fsspec (e.g. ``{"client_kwargs": {"endpoint_url": ...}}``).
        row_format: How new per-trial rows are written (``parquet`` or ``arrow``); both are read.
    """

    def __init__(
        self, url: str, storage_options: dict[str, Any] | None = None, row_format: str = "parquet"
    ) -> None:
        if row_format not in ROW_SUFFIXES:
            raise UsageError(f"row format must be one of {sorted(ROW_SUFFIXES)}, not {row_format!r}")
        self.row_format = row_format
        self.row_suffix = ROW_SUFFIXES[row_format]
        self.url = url
        self.storage_options = dict(storage_options or {})
        self.objects = ObjectFolder(url, self.storage_options)
        self.fs, self.root, self.local = self.objects.fs, self.objects.root, self.objects.local

    # ---- paths -------------------------------------------------------------
    def _path(self, *parts: str) -> str:
        return self.objects.path(*parts)

    def row_path(self, model_slug: str, trial_id: str) -> str:
        """Where a trial's row lives."""
        return self._path("rows", f"model={model_token(model_slug)}", f"{trial_id}{self.row_suffix}")

    def batch_path(self, trial_ids: Iterable[str]) -> str:
        """Where the rows of the batch of these trials live (always Parquet)."""
        return self._path("rows", BATCHES, f"{batch_digest(trial_ids)}.parquet")

    def transcript_path(self, model_slug: str, trial_id: str) -> str:
        """Where the schema-1.0 JSON of a trial run alone lives."""
        return self._path("transcripts", archives.member_name(model_token(model_slug), trial_id))

    def archive_path(self, trial_ids: Iterable[str]) -> str:
        """Where the transcripts of the batch of these trials live (beside its row object's digest)."""
        return self._path("transcripts", BATCHES, f"{batch_digest(trial_ids)}{archives.SUFFIX}")

    # ---- object writes (the store's two commit primitives) -----------------
    def create_only(self, path: str, data: bytes) -> bool:
        """Write ``data`` at ``path`` unless something is already there (True if this call made it)."""
        return self.objects.create_only(path, data)

    def overwrite(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` atomically (one PUT; locally a rename)."""
        self.objects.overwrite(path, data)

    # ---- manifest ----------------------------------------------------------
    def write_manifest(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Write the run manifest first; on resume, return the stored one unchanged.

        Raises:
            UsageError: The output already holds a different grid.
        """
        data = json.dumps(manifest, sort_keys=True, indent=1).encode()
        if self.create_only(self._path(MANIFEST), data):
            return manifest
        stored = self.read_manifest()
        if stored is None or stored.get("grid_id") != manifest.get("grid_id"):
            raise UsageError(
                f"{self.url} already holds results of another grid "
                f"({(stored or {}).get('grid_id')!r}); choose another --out"
            )
        return stored

    def read_manifest(self) -> dict[str, Any] | None:
        """The stored run manifest, or None before the first run."""
        try:
            return json.loads(self.fs.cat_file(self._path(MANIFEST)))
        except FileNotFoundError:
            return None

    def write_attempt(self, run_id: str, info: dict[str, Any]) -> None:
        """Record one driver invocation (package versions, git state, flags) beside the manifest."""
        self.overwrite(
            self._path("attempts", f"{run_id}.json"), json.dumps(info, sort_keys=True, indent=1).encode()
        )

    # ---- trials ------------------------------------------------------------
    def put_trial(self, record: TrialRecord, row: dict[str, Any], transcript: bytes | None = None) -> bool:
        """Store one finished trial.

        A harness/provider outcome goes under ``failures/`` (counted, never blocking a
        later retry); anything else is committed by creating its row object.

        Args:
            record: The trial.
            row: ``record_to_row(record)``.
            transcript: ``record.to_json()`` bytes, if already serialised.

        Returns:
            True if this call stored the trial, False if it was already stored.
        """
        model, trial_id = record.model, record.apiflow.trial_id
        body = transcript if transcript is not None else record.to_json_bytes()
        if record.is_harness_outcome:
            self._put_failure(record, row, body)
            return True
        if self.is_done(model, trial_id):
            return False
        # Transcript first, row last: a row always has its transcript. Last writer wins on
        # the transcript, first writer on the row (a re-run of a dead actor's trial only).
        self.overwrite(self.transcript_path(model, trial_id), body)
        return self.create_only(self.row_path(model, trial_id), row_bytes(row, self.row_format))

    def put_batch(
        self, trial_ids: Sequence[str], trials: Sequence[tuple[TrialRecord, dict[str, Any]]]
    ) -> bool:
        """Store the finished trials of one batch: ONE transcript archive, then ONE create-only row object.

        Harness/provider outcomes go under ``failures/`` as in ``put_trial``; every other trial
        is committed by the batch object at ``batch_path(trial_ids)`` (``trial_ids``: the whole
        batch as sent, so the driver can name the object without knowing the outcomes). Their
        transcripts go first, together, to ``archive_path(trial_ids)``.

        Returns:
            True if this call created the batch object (or had no row to commit), False if the
            object already existed: another attempt of this very batch committed first.
        """
        committed, transcripts = [], []
        for record, row in trials:
            body = record.to_json_bytes()
            if record.is_harness_outcome:
                self._put_failure(record, row, body)
                continue
            transcripts.append(
                (archives.member_name(model_token(record.model), record.apiflow.trial_id), body)
            )
            committed.append(row)
        if not committed:
            return True
        # Transcripts first: a committed row always has its transcript. The archive is overwritten
        # (last writer wins, as a per-trial transcript is); the row object decides who committed.
        self.overwrite(self.archive_path(trial_ids), archives.archive_bytes(transcripts))
        return self.create_only(self.batch_path(trial_ids), rows_bytes(committed))

    def _put_failure(self, record: TrialRecord, row: dict[str, Any], body: bytes) -> None:
        # One object per attempt (the run id is the grid's, shared by every resume): a later
        # attempt must not overwrite an earlier one, whose spend the budget rebuild reads.
        attempt = hashlib.sha256(body).hexdigest()[:12]
        base = self._path(
            "failures",
            f"model={model_token(record.model)}",
            record.apiflow.trial_id,
            f"{record.provenance.run_id}-{attempt}",
        )
        self.overwrite(f"{base}.json", body)
        self.overwrite(f"{base}{self.row_suffix}", row_bytes(row, self.row_format))

    def batch_ids(self, trial_ids: Sequence[str]) -> set[str]:
        """The trial ids committed by the batch object of these trials (empty if it does not exist).

        The driver asks this about a batch whose actor died: its stored trials are done (the
        object is all-or-nothing), the others go back on the queue.
        """
        try:
            return set(ids_in(self.objects.cat(self.batch_path(trial_ids))))
        except FileNotFoundError:
            return set()

    def is_done(self, model_slug: str, trial_id: str) -> bool:
        """True when the trial's row is stored, in either format (a worker checks before spending)."""
        base = self.row_path(model_slug, trial_id)[: -len(self.row_suffix)]
        return any(self.objects.exists(base + suffix) for suffix in ROW_SUFFIXES.values())

    def done_ids(self) -> set[str]:
        """Trial ids with a stored row: per-trial rows by listing, batch objects by their ids column.

        Batch objects that ``compact`` folded in (named in ``compacted/_batches.json``) are not read
        again: their ids come from the compacted files' id column. Batch objects are create-only and
        compaction only ever adds rows, so the list stays true; a resume after ``grid compact`` reads
        ~one object per model instead of one per batch (on S3, one GET each).
        """
        singles, batches = self._row_objects()
        covered = self._covered_batches()
        ids = {_stem(p) for p in singles}
        if covered:
            compacted = self.objects.list("compacted", ".parquet")
            fs = None if self.local else self.fs
            table = ds.dataset(
                sorted(compacted), schema=ROW_SCHEMA, format="parquet", filesystem=fs
            ).to_table(columns=["trial_id"])
            ids.update(table.column("trial_id").to_pylist())
        for _, data in self.objects.cat_many([p for p in batches if p.rsplit("/", 1)[-1] not in covered]):
            ids.update(ids_in(data))
        return ids

    def _covered_batches(self) -> set[str]:
        try:
            return set(json.loads(self.objects.cat(self._path(COVERED))))
        except FileNotFoundError:
            return set()

    def row_ids(self) -> list[str]:
        """The trial id of every stored row, repeats kept (a test of "no duplicate" counts them)."""
        singles, batches = self._row_objects()
        ids = [_stem(p) for p in singles]
        for _, data in self.objects.cat_many(batches):
            ids.extend(ids_in(data))
        return ids

    def _row_objects(self) -> tuple[list[str], list[str]]:
        """``(per-trial row objects, batch row objects)``, each sorted (the read order)."""
        singles: list[str] = []
        batches: list[str] = []
        for path in sorted(self.objects.list("rows", _ROW_ENDINGS)):
            (batches if path.rsplit("/", 2)[-2] == BATCHES else singles).append(path)
        return singles, batches

    def failed_ids(self) -> set[str]:
        """Trial ids with a harness/provider outcome and no stored row."""
        return {p.rsplit("/", 2)[-2] for p in self.objects.list("failures", _ROW_ENDINGS)} - self.done_ids()

    def recorded_spend(self) -> tuple[float, float, int]:
        """``(rows_usd, failures_usd, objects)``: the cost every stored row and failure row records.

        Reads only the row objects' bytes, fetched concurrently (s3fs batches ``cat`` of many
        paths), and only their ``cost_usd`` column: the budget ledger's rebuild on resume
        (docs/design/044-chaos-suite.md) must stay cheap next to the grid it guards.
        """
        totals = []
        count = 0
        for prefix in ("rows", "failures"):
            paths = self.objects.list(prefix, _ROW_ENDINGS)
            count += len(paths)
            totals.append(sum(row_cost(path, data) for path, data in self.objects.cat_many(paths)))
        return totals[0], totals[1], count

    def write_checkpoint(self, attempt: str, data: dict[str, Any]) -> None:
        """The budget ledger's checkpoint of one driver attempt (overwritten as the attempt runs)."""
        self.overwrite(self._path("ledger", f"{attempt}.json"), json.dumps(data, sort_keys=True).encode())

    def read_checkpoints(self) -> list[dict[str, Any]]:
        """Every attempt's last ledger checkpoint (unordered; each carries its ``written_at``)."""
        found = []
        for path in self.objects.list("ledger", ".json"):
            try:
                found.append(json.loads(self.fs.cat_file(path)))
            except (FileNotFoundError, ValueError):
                continue  # a checkpoint half-written by a local writer that died: the others remain
        return found

    def read_transcript(self, model_slug: str, trial_id: str) -> dict[str, Any]:
        """A stored trial's schema-1.0 JSON: its own file, else its member in a committed archive.

        Raises:
            FileNotFoundError: No transcript of that trial is stored.
        """
        try:
            return json.loads(self.fs.cat_file(self.transcript_path(model_slug, trial_id)))
        except FileNotFoundError:
            pass
        member = archives.member_name(model_token(model_slug), trial_id)
        for path in self.committed_archives():  # one GET each: a lookup, not a scan of a grid
            try:
                ((_, body),) = archives.read_members(self.objects.cat(path), [member])
            except KeyError:
                continue
            return json.loads(body)
        raise FileNotFoundError(f"no transcript of trial {trial_id} ({model_slug}) under {self.url}")

    def unpack_archives(self) -> tuple[int, int]:
        """Write each committed archive's members as the per-trial files of the same names
        (``transcripts/model=<m>/<trial_id>.json``), for tools that want one file a trial.

        A trial in two committed archives is written from the first in path order, the one the
        readers show; the archives stay (they remain what the readers read). Every member of an
        archive is checked to land inside ``transcripts/`` before any is written (``unpack``).

        Returns:
            ``(files written, members skipped as a later copy of a trial already written)``.

        Raises:
            UsageError: an archive has a member that would land outside ``transcripts/``.
        """
        written: set[str] = set()
        skipped = 0
        base = self._path("transcripts")
        for path in self.committed_archives():
            for target, body in unpack_targets(self.objects, base, self.objects.cat(path), path):
                if target in written:
                    skipped += 1
                    continue
                self.overwrite(target, body)
                written.add(target)
        return len(written), skipped

    def committed_archives(self) -> list[str]:
        """The transcript archives whose batch row object exists, in path order (``archives.committed``)."""
        _, batches = self._row_objects()
        return archives.committed(self.objects.list(f"transcripts/{BATCHES}", archives.SUFFIX), batches)

    # ---- reading and compaction ---------------------------------------------
    def _read_files(self, paths: Iterable[str]) -> pa.Table:
        paths = sorted(paths)
        if not paths:
            return ROW_SCHEMA.empty_table()
        fs = None if self.local else self.fs
        tables = [
            ds.dataset(group, schema=ROW_SCHEMA, format=kind, filesystem=fs).to_table()
            for kind, suffix in (("parquet", ".parquet"), ("ipc", ".arrow"))
            if (group := [p for p in paths if p.endswith(suffix)])
        ]
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def read_rows(self, *, failures: bool = False) -> pa.Table:
        """All stored rows, one per trial id (compacted files plus rows written since).

        Args:
            failures: Read the harness/provider outcomes instead (all attempts kept).
        """
        if failures:
            return self._read_files(self.objects.list("failures", _ROW_ENDINGS))
        compacted = self._read_files(self.objects.list("compacted", ".parquet"))
        seen = set(compacted.column("trial_id").to_pylist())
        singles, batches = self._row_objects()
        fresh = self._read_files([p for p in singles if _stem(p) not in seen])
        batched = self._read_files(batches)
        if seen and batched.num_rows:
            batched = batched.filter(pc.invert(pc.is_in(batched.column("trial_id"), pa.array(list(seen)))))
        return dedupe(pa.concat_tables([compacted, fresh, batched]))

    def compact(self) -> CompactSummary:
        """Merge stored rows into one Parquet file per model (idempotent; rows stay as resume markers).

        Per-trial rows come before batch rows, each in path order: the same first row of a trial
        id that ``read_rows`` keeps.
        """
        singles, batches = self._row_objects()
        paths_by_model: dict[str, list[str]] = {}
        for path in singles:
            paths_by_model.setdefault(path.rsplit("/", 2)[-2], []).append(path)
        by_model = {token: [self._read_files(paths)] for token, paths in paths_by_model.items()}
        batched = self._read_files(batches)
        for model in sorted(set(batched.column("model").to_pylist())):
            token = f"model={model_token(model)}"
            by_model.setdefault(token, []).append(batched.filter(pc.equal(batched.column("model"), model)))
        files, rows_read, trials = [], 0, 0
        for token, parts in sorted(by_model.items()):
            table = pa.concat_tables(parts)
            rows_read += table.num_rows
            table = dedupe(table).sort_by([("task_id", "ascending"), ("epoch", "ascending")])
            trials += table.num_rows
            target = self._path("compacted", f"{token}.parquet")
            sink = io.BytesIO()
            pq.write_table(table, sink)
            self.overwrite(target, sink.getvalue())
            files.append(target)
        # Last, after every per-model file: the batch objects those files now hold (done_ids skips them).
        self.overwrite(
            self._path(COVERED), json.dumps(sorted(p.rsplit("/", 1)[-1] for p in batches)).encode()
        )
        return CompactSummary(rows_read=rows_read, trials=trials, files=tuple(files))


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
