"""Checked reads of a store's transcripts: a trial's JSON back, and what a damaged one un-commits.

A committed trial always has its transcript (its own ``transcripts/model=<m>/<id>.json``, or its
member in its batch's ``transcripts/batches/<digest>.zip``), so a transcript found damaged takes
the row object that committed it aside too, and a resume runs those trials again (042, "Damaged
objects"). ``store.ResultStore`` is the public face; the rows' side is ``reading.StoredRows``.
"""

from __future__ import annotations

import json
import zipfile
from typing import Any

from apiflow.results import archives
from apiflow.results.integrity import Damaged, check_transcript, trial_id_of
from apiflow.results.layout import BATCHES, ROW_SUFFIXES, model_token, stem
from apiflow.results.objects import ObjectFolder
from apiflow.results.quarantine import Quarantine
from apiflow.results.reading import StoredRows
from apiflow.results.unpack import unpack_targets


class StoredTranscripts:
    """The transcripts of one store, read with their checks.

    Args:
        objects: The store's objects.
        quarantine: Where damaged objects go.
        rows: The store's checked rows (which trials a damaged transcript un-commits).
        url: The store's URL, to name it when a transcript is missing.
    """

    def __init__(self, objects: ObjectFolder, quarantine: Quarantine, rows: StoredRows, url: str) -> None:
        self.objects = objects
        self.quarantine = quarantine
        self.rows = rows
        self.url = url

    def path(self, model_slug: str, trial_id: str) -> str:
        """Where the schema-1.0 JSON of a trial run alone lives."""
        return self.objects.path("transcripts", archives.member_name(model_token(model_slug), trial_id))

    def read(self, model_slug: str, trial_id: str) -> dict[str, Any]:
        """A stored trial's schema-1.0 JSON: its own file, else its member in a committed archive.

        A damaged file or archive met on the way is set aside with its trials (``damaged``).

        Raises:
            FileNotFoundError: No readable transcript of that trial is stored.
        """
        path = self.path(model_slug, trial_id)
        try:
            return self.checked_file(path, self.objects.cat(path))
        except FileNotFoundError:
            pass
        except Damaged as exc:
            self.damaged(path, str(exc))
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
        gone or damaged (then set aside with its batch: ``damaged``)."""
        try:
            data = self.objects.cat(path)
            archives.check_archive(data)
        except FileNotFoundError:
            return None
        except Damaged as exc:
            self.damaged(path, str(exc))
            return None
        return data

    def archive_whole(self, path: str) -> bool:
        """Whether a batch's archive leaves its rows counted (``reading.StoredRows``'s question)."""
        # Gone is not damaged: its rows still count (nothing deletes an archive).
        return not self.objects.exists(path) or self._whole_archive(path) is not None

    def checked_file(self, path: str, data: bytes) -> dict[str, Any]:
        """A stored trial JSON (``transcripts/model=<m>/<id>.json`` or a failed attempt's
        ``failures/model=<m>/<id>/<attempt>.json``), checked: whole, and the trial its path names.

        Raises:
            Damaged: It is not (the caller sets it aside: ``damaged``).
        """
        trial = check_transcript(data)
        parts = self.quarantine.relative(path).split("/")
        expected = parts[-2] if parts[0] == "failures" else stem(path)
        named = trial_id_of(trial)
        if named is not None and named != expected:
            raise Damaged(f"holds trial {named}, not the one its path names")
        return trial

    def damaged(self, path: str, reason: str) -> None:
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
            row = self.objects.path("rows", BATCHES, f"{digest}.parquet")
            named = self._members_of(path)
            self.quarantine.move(path, reason, again)  # first: reading its row object asks after it
            ids = self.rows.ids([row]) or named
            if self.objects.exists(row):
                self.quarantine.move(row, f"the transcript archive of its batch is damaged ({reason})", again)
            self._withdraw(ids, f"{digest}.parquet")
        elif parts[0] == "transcripts" and len(parts) == 3:
            self.quarantine.move(path, reason, again)
            base = self.objects.path("rows", parts[1], stem(path))
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
        held = set(self.rows.compacted(["trial_id"])[0].column("trial_id").to_pylist())
        if ids & held or (batch is not None and batch in self.rows.covered()):
            self.rows.compact(exclude=ids, uncover=batch)

    def unpack(self) -> tuple[int, int]:
        """Write each committed archive's members as the per-trial files of the same names
        (``transcripts/model=<m>/<trial_id>.json``), for tools that want one file a trial.

        A trial in two committed archives is written from the first in path order, the one the
        readers show; the archives stay (they remain what the readers read). Every member of an
        archive is checked to land inside ``transcripts/`` before any is written (``unpack``); a
        damaged archive is set aside with its batch (``damaged``) and writes nothing.

        Returns:
            ``(files written, members skipped as a later copy of a trial already written)``.

        Raises:
            UsageError: an archive has a member that would land outside ``transcripts/``.
        """
        written: set[str] = set()
        skipped = 0
        base = self.objects.path("transcripts")
        for path in self.committed_archives():
            data = self._whole_archive(path)
            if data is None:
                continue
            for target, body in unpack_targets(self.objects, base, data, path):
                if target in written:
                    skipped += 1
                    continue
                self.objects.overwrite(target, body)
                written.add(target)
        return len(written), skipped

    def committed_archives(self) -> list[str]:
        """The transcript archives whose batch is committed, in path order (``archives.committed``):
        its row object exists, or a compaction folded it in (its rows live on in the compacted files)."""
        _, batches = self.rows.row_objects()
        listed = self.objects.list(f"transcripts/{BATCHES}", archives.SUFFIX)
        return archives.committed(listed, [*batches, *self.rows.covered()])
