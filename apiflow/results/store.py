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
``objects.ObjectFolder``'s; this module holds the layout and what a stored trial means.
An existing row object means "already done": that is how resume and duplicate
protection work, so every writer may race and exactly one row survives; readers keep
the first row of each trial id (docs/design/042-result-store.md, "Batched rows").
Every object a reader reads is checked first (``integrity``, ``archives.check_archive``): a
damaged one is moved aside, named on stderr, and its trials do not count (042, "Damaged objects").
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import pyarrow as pa

from apiflow.errors import UsageError
from apiflow.results import archives
from apiflow.results.integrity import Damaged, check_transcript, trial_id_of
from apiflow.results.layout import BATCHES, COVERED, MANIFEST, ROW_ENDINGS, ROW_SUFFIXES, model_token, stem
from apiflow.results.objects import ObjectFolder
from apiflow.results.quarantine import Quarantine
from apiflow.results.reading import CompactSummary, StoredRows
from apiflow.results.record import TrialRecord
from apiflow.results.rowfiles import ARCHIVE_SIZE, BATCH_IDS, batch_digest, row_bytes, rows_bytes
from apiflow.results.unpack import unpack_targets

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

    # ---- transcripts -----------------------------------------------------------------
    def read_transcript(self, model_slug: str, trial_id: str) -> dict[str, Any]:
        """A stored trial's schema-1.0 JSON: its own file, else its member in a committed archive.

        A damaged file or archive met on the way is set aside with its trials (``transcript_damaged``).

        Raises:
            FileNotFoundError: No readable transcript of that trial is stored.
        """
        path = self.transcript_path(model_slug, trial_id)
        try:
            return self.checked_trial_file(path, self.objects.cat(path))
        except FileNotFoundError:
            pass
        except Damaged as exc:
            self.transcript_damaged(path, str(exc))
        member = archives.member_name(model_token(model_slug), trial_id)
        for archive in self.committed_archives():  # one GET each: a lookup, not a scan of a grid
            data = self._whole_archive(archive)
            if data is None:
                continue
            try:
                ((_, body),) = archives.read_members(data, [member])
            except KeyError:
                continue
            return json.loads(body)
        raise FileNotFoundError(f"no transcript of trial {trial_id} ({model_slug}) under {self.url}")

    def _whole_archive(self, path: str) -> bytes | None:
        """The bytes of a transcript archive that passes ``archives.check_archive``; None if it is
        gone or damaged (then set aside with its batch: ``transcript_damaged``)."""
        try:
            data = self.objects.cat(path)
            archives.check_archive(data)
        except FileNotFoundError:
            return None
        except Damaged as exc:
            self.transcript_damaged(path, str(exc))
            return None
        return data

    def _archive_whole(self, path: str) -> bool:
        # Gone is not damaged: its rows still count (nothing deletes an archive).
        return not self.objects.exists(path) or self._whole_archive(path) is not None

    def checked_trial_file(self, path: str, data: bytes) -> dict[str, Any]:
        """A stored trial JSON (``transcripts/model=<m>/<id>.json`` or a failed attempt's
        ``failures/model=<m>/<id>/<attempt>.json``), checked: whole, and the trial its path names.

        Raises:
            Damaged: It is not (the caller sets it aside: ``transcript_damaged``).
        """
        trial = check_transcript(data)
        parts = self.quarantine.relative(path).split("/")
        expected = parts[-2] if parts[0] == "failures" else stem(path)
        named = trial_id_of(trial)
        if named is not None and named != expected:
            raise Damaged(f"holds trial {named}, not the one its path names")
        return trial

    def transcript_damaged(self, path: str, reason: str) -> None:
        """Set aside a damaged transcript (a trial's file or a batch's archive) and un-commit its trials.

        A committed trial always has its transcript, so the row object that committed it (the
        trial's row, the batch's object) goes aside too, and compacted rows of those trials are
        withdrawn by compacting again without them (a trial stored in another good object keeps
        that row): a resume runs exactly these trials again. A failed attempt's record is only set aside.
        """
        parts = self.quarantine.relative(path).split("/")
        again = "its trials are not counted as stored and run again on resume"
        if parts[:2] == ["transcripts", BATCHES]:
            digest = stem(path)
            row = self._path("rows", BATCHES, f"{digest}.parquet")
            named = self._members_of(path)
            self.quarantine.move(path, reason, again)  # first: reading its row object asks after it
            ids = self.stored.ids([row]) or named
            if self.objects.exists(row):
                self.quarantine.move(row, f"the transcript archive of its batch is damaged ({reason})", again)
            self._withdraw(ids, f"{digest}.parquet")
        elif parts[0] == "transcripts" and len(parts) == 3:
            self.quarantine.move(path, reason, again)
            base = self._path("rows", parts[1], stem(path))
            for row in (base + suffix for suffix in ROW_SUFFIXES.values()):
                if self.objects.exists(row):
                    self.quarantine.move(row, f"its transcript is damaged ({reason})", again)
            self._withdraw({stem(path)}, None)
        else:
            self.quarantine.move(path, reason, "a failed attempt's record; the trial's retry is unaffected")

    def _members_of(self, archive: str) -> set[str]:
        """The trial ids a damaged archive's directory still names (none if it has none left)."""
        try:
            return {archives.trial_id_of(m) for m in archives.member_names(self.objects.cat(archive))}
        except (FileNotFoundError, zipfile.BadZipFile, OSError, ValueError):
            return set()

    def _withdraw(self, ids: set[str], batch: str | None) -> None:
        """Compact again without ``ids``' compacted rows and without ``batch`` among the covered ones,
        when a compacted file holds any of them (nothing to do before the first compaction)."""
        if not self.objects.list("compacted", ".parquet"):
            return
        held = set(self.stored.compacted(["trial_id"])[0].column("trial_id").to_pylist())
        if ids & held or (batch is not None and batch in self.stored.covered()):
            self.stored.compact(exclude=ids, uncover=batch)

    def unpack_archives(self) -> tuple[int, int]:
        """Write each committed archive's members as the per-trial files of the same names
        (``transcripts/model=<m>/<trial_id>.json``), for tools that want one file a trial.

        A trial in two committed archives is written from the first in path order, the one the
        readers show; the archives stay (they remain what the readers read). Every member of an
        archive is checked to land inside ``transcripts/`` before any is written (``unpack``); a
        damaged archive is set aside with its batch (``transcript_damaged``) and writes nothing.

        Returns:
            ``(files written, members skipped as a later copy of a trial already written)``.

        Raises:
            UsageError: an archive has a member that would land outside ``transcripts/``.
        """
        written: set[str] = set()
        skipped = 0
        base = self._path("transcripts")
        for path in self.committed_archives():
            data = self._whole_archive(path)
            if data is None:
                continue
            for target, body in unpack_targets(self.objects, base, data, path):
                if target in written:
                    skipped += 1
                    continue
                self.overwrite(target, body)
                written.add(target)
        return len(written), skipped

    def committed_archives(self) -> list[str]:
        """The transcript archives whose batch is committed, in path order (``archives.committed``):
        its row object exists, or a compaction folded it in (its rows live on in the compacted files)."""
        _, batches = self.stored.row_objects()
        listed = self.objects.list(f"transcripts/{BATCHES}", archives.SUFFIX)
        return archives.committed(listed, [*batches, *self.stored.covered()])

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
