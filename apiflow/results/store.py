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
                                                (a resume retries the trial until the grid's bound of them;
                                                their spend counts toward the budget)
    ledger/<attempt>.json                       the budget ledger's last checkpoint of one driver attempt
    compacted/model=<m>.parquet                 per-model merge written by ``compact``
    compacted/_batches.json                     the batch objects that merge holds (``done_ids`` skips them;
                                                their archives stay committed whatever becomes of them)
    quarantine/<path>                           objects a reader found damaged, moved aside (``quarantine``)

The object primitives (create-only, atomic overwrite, concurrent reads, listings) are
``objects.ObjectFolder``'s, the checked reads of rows ``reading.StoredRows``'s and of transcripts
``transcripts.StoredTranscripts``'s; this module holds the layout and what a stored trial means.
An existing row object means "already done": that is how resume and duplicate
protection work, so every writer may race and exactly one row survives; readers keep
the first row of each trial id (docs/design/042-result-store.md, "Batched rows").
Every object a reader reads is checked first (``integrity``, ``archives.check_archive``): a
damaged one is moved aside, named on stderr, and its trials do not count (042, "Damaged objects").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import pyarrow as pa

from apiflow.errors import UsageError
from apiflow.results import archives
from apiflow.results.layout import BATCHES, COVERED, MANIFEST, ROW_ENDINGS, ROW_SUFFIXES, model_token
from apiflow.results.objects import ObjectFolder
from apiflow.results.quarantine import Quarantine
from apiflow.results.reading import CompactSummary, StoredRows
from apiflow.results.record import TrialRecord
from apiflow.results.rowfiles import ARCHIVE_SIZE, BATCH_IDS, batch_digest, row_bytes, rows_bytes
from apiflow.results.transcripts import StoredTranscripts

__all__ = ["BATCHES", "COVERED", "MANIFEST", "ROW_SUFFIXES", "CompactSummary", "ResultStore", "model_token"]


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
        self.quarantine = Quarantine(self.objects, url)
        """The objects this store's readers found damaged and moved aside (``quarantine.found``)."""
        self.stored = StoredRows(self.objects, self.quarantine, self._archive_whole)
        self.transcripts = StoredTranscripts(self.objects, self.quarantine, self.stored, url)
        """The transcripts, read with their checks (a damaged one un-commits its trials)."""

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
        return self.transcripts.path(model_slug, trial_id)

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

    def replace_manifest(self, manifest: dict[str, Any], previous: dict[str, Any]) -> None:
        """Put ``manifest`` in place of ``previous`` (a grid extended in place), which is kept first
        under ``manifests/<its grid id>.json``: the folder's history stays readable."""
        kept = json.dumps(previous, sort_keys=True, indent=1).encode()
        self.create_only(self._path("manifests", f"{previous['grid_id']}.json"), kept)
        self.overwrite(self._path(MANIFEST), json.dumps(manifest, sort_keys=True, indent=1).encode())

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
        archive = archives.archive_bytes(transcripts)
        self.overwrite(self.archive_path(trial_ids), archive)
        # The batch's ids as sent (its name's digest) and its archive's size ride in the footer.
        metadata = {BATCH_IDS: "\n".join(sorted(trial_ids)), ARCHIVE_SIZE: str(len(archive))}
        return self.create_only(self.batch_path(trial_ids), rows_bytes(committed, metadata=metadata))

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
        """The trial ids committed by the batch object of these trials (empty if it does not exist,
        or is damaged: then it is moved aside and none of them is stored).

        The driver asks this about a batch whose actor died: its stored trials are done (the
        object is all-or-nothing), the others go back on the queue.
        """
        return self.stored.ids([self.batch_path(trial_ids)])

    def is_done(self, model_slug: str, trial_id: str) -> bool:
        """True when the trial's row is stored, in either format (a worker checks before spending)."""
        base = self.row_path(model_slug, trial_id)[: -len(self.row_suffix)]
        return any(self.objects.exists(base + suffix) for suffix in ROW_SUFFIXES.values())

    # ---- what is stored (checked reads: ``reading``) ----------------------------
    def done_ids(self) -> set[str]:
        """Trial ids with a stored row that passes its checks: compacted files, per-trial rows, batch objects.

        Batch objects that ``compact`` folded in (named in ``compacted/_batches.json``) are not read
        again, nor per-trial rows of trials the compacted files hold: their ids come from the
        compacted files' id column (batch objects are create-only and compaction only ever adds
        rows); a resume after ``grid compact`` reads ~one object per model. A batch object whose
        transcript archive is not the size it recorded has that archive checked whole: a damaged
        one un-commits the batch (``transcript_damaged``).
        """
        return self.stored.done_ids()

    def row_ids(self) -> list[str]:
        """The trial id of every stored row that passes its checks, repeats kept (a test of "no
        duplicate" counts them; every other reader keeps the first row of a trial id)."""
        singles, batches = self.stored.row_objects()
        checked = self.stored.checked([*singles, *batches], ["trial_id"])
        return [str(v) for _, table, _ in checked for v in table.column(0).to_pylist()]

    def failed_ids(self) -> set[str]:
        """Trial ids with a harness/provider outcome (a failure row that passes its checks) and no stored row."""
        failures = self.stored.checked(sorted(self.objects.list("failures", ROW_ENDINGS)), ["trial_id"])
        return {path.rsplit("/", 2)[-2] for path, _, _ in failures} - self.done_ids()

    def failed_attempts(
        self, columns: Sequence[str] = ("trial_id", "harness_error"), skip: AbstractSet[str] = frozenset()
    ) -> pa.Table:
        """``columns`` of every harness/provider outcome on record, one row per attempt, of the trials
        not in ``skip`` (their failure rows are not even read): what bounds the retries of an unscored
        trial (``cluster.plan.resume_plan``). Only failure rows that pass their checks count."""
        return self.stored.attempts(list(columns), skip)

    def recorded_spend(self) -> tuple[float, float, int]:
        """``(rows_usd, failures_usd, objects)``: the cost every stored row and failure row records.

        Reads only the row objects' bytes, fetched concurrently (s3fs batches ``cat`` of many
        paths), and only their ``cost_usd`` column: the budget ledger's rebuild on resume
        (docs/design/044-chaos-suite.md) must stay cheap next to the grid it guards. A damaged
        object is moved aside and counts nothing; a compacted row whose row object is gone counts.
        """
        return self.stored.recorded_spend()

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

    # ---- transcripts (checked reads: ``transcripts``) ---------------------------------
    def read_transcript(self, model_slug: str, trial_id: str) -> dict[str, Any]:
        """A stored trial's schema-1.0 JSON, its own file or its member in a committed archive
        (``StoredTranscripts.read``; FileNotFoundError when no readable one is stored)."""
        return self.transcripts.read(model_slug, trial_id)

    def _archive_whole(self, path: str) -> bool:
        # ``stored`` is given this before ``transcripts`` exists: looked up when asked.
        return self.transcripts.archive_whole(path)

    def checked_trial_file(self, path: str, data: bytes) -> dict[str, Any]:
        """A stored trial JSON checked whole and for the trial its path names, else ``Damaged``
        (``StoredTranscripts.checked_file``)."""
        return self.transcripts.checked_file(path, data)

    def transcript_damaged(self, path: str, reason: str) -> None:
        """Set aside a damaged transcript and un-commit its trials (``StoredTranscripts.damaged``)."""
        self.transcripts.damaged(path, reason)

    def unpack_archives(self) -> tuple[int, int]:
        """Write committed archives' members as per-trial files: ``(written, skipped as a later copy)``
        (``StoredTranscripts.unpack``; UsageError for a member that would land outside ``transcripts/``)."""
        return self.transcripts.unpack()

    def committed_archives(self) -> list[str]:
        """The transcript archives whose batch is committed, in path order (``StoredTranscripts``)."""
        return self.transcripts.committed_archives()

    # ---- reading and compaction ---------------------------------------------
    def read_rows(self, *, failures: bool = False) -> pa.Table:
        """All stored rows that pass their checks, one per trial id (compacted files plus rows written since).

        Args:
            failures: Read the harness/provider outcomes instead (all attempts kept).
        """
        return self.stored.read_rows(failures)

    def compact(self) -> CompactSummary:
        """Merge stored rows into one Parquet file per model (idempotent; rows stay as resume markers).

        The compacted files' own rows come first, then per-trial rows, then batch rows, each in
        path order: the same first row of a trial id that ``read_rows`` keeps. A row the compacted
        files hold stays there though its row object be set aside since, and so does its batch in
        ``compacted/_batches.json`` (its transcripts stay reachable: ``committed_archives``).
        """
        return self.stored.compact()
