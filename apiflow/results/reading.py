"""Checked reads of a store's rows: what is stored, what it cost, and compaction.

Every row object is read through ``rowfiles.read_table`` (its seal, its parse): one that fails is
moved aside (``quarantine``) and its rows count nowhere, so each reader here returns what the good
objects hold, de-duplicated by trial id (the first row in one fixed order: compacted files, then
per-trial rows, then batch objects, each in path order). ``store.ResultStore`` is the public face.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from apiflow.results.integrity import Damaged
from apiflow.results.layout import BATCHES, COVERED, ROW_ENDINGS, is_batch, model_token, name, stem
from apiflow.results.objects import ObjectFolder
from apiflow.results.quarantine import Quarantine
from apiflow.results.rowfiles import ARCHIVE_SIZE, BATCH_IDS, batch_digest, dedupe, read_table, table_bytes
from apiflow.results.rows import ROW_SCHEMA

NOT_COUNTED = "its trials are not counted as stored"


@dataclass(frozen=True)
class CompactSummary:
    """What ``compact`` did: rows read, distinct trials written, per-model files."""

    rows_read: int
    trials: int
    files: tuple[str, ...]


class StoredRows:
    """The row objects of one store, read with their checks.

    Args:
        objects: The store's objects.
        quarantine: Where damaged objects go.
        archive_whole: Checks a batch's transcript archive whole and, if it is damaged, un-commits
            the batch (``ResultStore.transcript_damaged``); asked only of an archive that is not the
            size its batch object recorded, so a resume notices a truncated or emptied one.
    """

    def __init__(
        self, objects: ObjectFolder, quarantine: Quarantine, archive_whole: Callable[[str], bool]
    ) -> None:
        self.objects = objects
        self.quarantine = quarantine
        self.archive_whole = archive_whole

    # ---- checked objects ------------------------------------------------------
    def checked(
        self, paths: Iterable[str], columns: list[str] | None = None
    ) -> Iterator[tuple[str, pa.Table, dict[str, str]]]:
        """``(path, rows, footer metadata)`` of each row object that passes its checks, in the order given.

        A damaged one is moved aside (``quarantine``) and left out: its trials do not count here;
        so is a batch object whose transcript archive is damaged (``archive_whole``).
        """
        sizes: dict[str, int] | None = None
        for path, data in self.objects.cat_many(list(paths)):
            found = self._check(path, data, columns)
            if found is None:
                continue
            recorded = _int(found[1].get(ARCHIVE_SIZE))
            if recorded is not None:
                if sizes is None:  # one listing per read, only when a batch recorded its archive's size
                    sizes = self.objects.sizes(f"transcripts/{BATCHES}", ".zip")
                archive = self.objects.path("transcripts", BATCHES, f"{stem(path)}.zip")
                if sizes.get(archive, recorded) != recorded and not self.archive_whole(archive):
                    continue
            yield path, found[0], found[1]

    def _check(
        self, path: str, data: bytes, columns: list[str] | None
    ) -> tuple[pa.Table, dict[str, str]] | None:
        try:
            table, meta = read_table(path, data, columns)
            if is_batch(path):
                _check_batch_name(path, table, meta)
        except Damaged as exc:
            self.quarantine.move(path, str(exc), NOT_COUNTED)
            return None
        return table, meta

    def ids(self, paths: Iterable[str]) -> set[str]:
        """The trial ids the row objects at ``paths`` hold (checked)."""
        return {
            str(v) for _, table, _ in self.checked(paths, ["trial_id"]) for v in table.column(0).to_pylist()
        }

    def compacted(self, columns: list[str] | None = None) -> tuple[pa.Table, bool]:
        """The rows of the compacted files that pass their checks, and whether every one did."""
        paths = sorted(self.objects.list("compacted", ".parquet"))
        tables = []
        for path in paths:  # few, large objects: one at a time
            try:
                found = self._check(path, self.objects.cat(path), columns)
            except FileNotFoundError:
                continue
            if found is not None:
                tables.append(found[0])
        fields = [ROW_SCHEMA.field(c) for c in columns] if columns else list(ROW_SCHEMA)
        return _concat(tables, pa.schema(fields)), len(tables) == len(paths)

    def covered(self) -> set[str]:
        """The names of the batch objects the last compaction folded in (``compacted/_batches.json``)."""
        path = self.objects.path(COVERED)
        try:
            data = self.objects.cat(path)
        except FileNotFoundError:
            return set()
        try:
            names = json.loads(data)
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ValueError("not a list of names")
        except ValueError as exc:  # JSONDecodeError included
            self.quarantine.move(path, f"damaged ({exc})", "the batch objects it named are read again")
            return set()
        return set(names)

    def row_objects(self) -> tuple[list[str], list[str]]:
        """``(per-trial row objects, batch row objects)``, each sorted (the read order)."""
        singles: list[str] = []
        batches: list[str] = []
        for path in sorted(self.objects.list("rows", ROW_ENDINGS)):
            (batches if is_batch(path) else singles).append(path)
        return singles, batches

    # ---- readers --------------------------------------------------------------
    def done_ids(self) -> set[str]:
        """Trial ids with a stored row that passes its checks (``ResultStore.done_ids``)."""
        singles, batches = self.row_objects()
        compacted, whole = self.compacted(["trial_id"])
        ids = set(compacted.column("trial_id").to_pylist())
        covered = self.covered() if whole else set()
        ids |= self.ids(p for p in singles if stem(p) not in ids)
        return ids | self.ids(p for p in batches if name(p) not in covered)

    def read_rows(self, failures: bool = False) -> pa.Table:
        """All stored rows that pass their checks, one per trial id (``ResultStore.read_rows``)."""
        if failures:
            return _concat(
                [t for _, t, _ in self.checked(sorted(self.objects.list("failures", ROW_ENDINGS)))]
            )
        compacted, whole = self.compacted()
        seen = set(compacted.column("trial_id").to_pylist())
        covered = self.covered() if whole else set()
        singles, batches = self.row_objects()
        fresh = [t for _, t, _ in self.checked(p for p in singles if stem(p) not in seen)]
        batched = _concat([t for _, t, _ in self.checked(p for p in batches if name(p) not in covered)])
        return dedupe(_concat([compacted, *fresh, _without(batched, seen)]))

    def attempts(self, columns: list[str], skip: AbstractSet[str] = frozenset()) -> pa.Table:
        """``columns`` of every failure row that passes its checks, one row per attempt, but for the
        trials in ``skip`` (not read: a failure row's path names its trial) (``ResultStore.failed_attempts``)."""
        paths = sorted(p for p in self.objects.list("failures", ROW_ENDINGS) if p.rsplit("/", 2)[-2] not in skip)
        schema = pa.schema([ROW_SCHEMA.field(c) for c in columns])
        return _concat([t for _, t, _ in self.checked(paths, columns)], schema)

    def recorded_spend(self) -> tuple[float, float, int]:
        """``(rows_usd, failures_usd, objects)`` over the objects that pass their checks
        (``ResultStore.recorded_spend``); a compacted row whose row object is gone counts too."""
        totals, count, seen = [], 0, set()
        for prefix in ("rows", "failures"):
            total = 0.0
            for _, table, _ in self.checked(
                sorted(self.objects.list(prefix, ROW_ENDINGS)), ["trial_id", "cost_usd"]
            ):
                count += 1
                total += _cost(table)
                if prefix == "rows":
                    seen.update(table.column("trial_id").to_pylist())
            totals.append(total)
        compacted, _ = self.compacted(["trial_id", "cost_usd"])
        return totals[0] + _cost(_without(compacted, seen)), totals[1], count

    def compact(self, exclude: AbstractSet[str] = frozenset(), uncover: str | None = None) -> CompactSummary:
        """Merge the compacted files' rows and every row object into one Parquet file per model
        (``ResultStore.compact``).

        Args:
            exclude: Trial ids whose compacted rows are dropped (their transcript is damaged); a row
                object holding one still adds it back.
            uncover: A batch object's name to leave out of ``compacted/_batches.json``.
        """
        singles, batches = self.row_objects()
        # Row objects first: a damaged archive met here withdraws its trials from the compacted files
        # (a nested compaction) before this one reads them.
        read = list(self.checked([*singles, *batches]))
        old, whole = self.compacted()
        covered = self.covered() - {uncover} if whole else set()
        rows = _concat([t for _, t, _ in read])
        merged = _concat([_without(old, exclude), rows])
        files, trials = [], 0
        for model in sorted(set(merged.column("model").to_pylist())):
            table = dedupe(merged.filter(pc.equal(merged.column("model"), model)))
            table = table.sort_by([("task_id", "ascending"), ("epoch", "ascending")])
            trials += table.num_rows
            target = self.objects.path("compacted", f"model={model_token(model)}.parquet")
            self.objects.overwrite(target, table_bytes(table))
            files.append(target)
        # Last, after every per-model file: the batch objects those files now hold (done_ids skips them).
        covered |= {name(p) for p, _, _ in read if is_batch(p)}
        self.objects.overwrite(self.objects.path(COVERED), json.dumps(sorted(covered)).encode())
        return CompactSummary(rows_read=rows.num_rows, trials=trials, files=tuple(files))


def _check_batch_name(path: str, table: pa.Table, meta: dict[str, str]) -> None:
    """A batch object that names its batch (``rowfiles.BATCH_IDS``) must be the object of that name."""
    sent = meta.get(BATCH_IDS)
    if sent is None:
        return  # written before batch objects named their batch
    ids = sent.split("\n")
    if batch_digest(ids) != stem(path):
        raise Damaged("holds another batch than its name says")
    if not set(table.column("trial_id").to_pylist()) <= set(ids):
        raise Damaged("holds trials its batch was not sent with")


def _concat(tables: list[pa.Table], schema: pa.Schema = ROW_SCHEMA) -> pa.Table:
    tables = [t for t in tables if t.num_rows] or tables[:1]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _without(table: pa.Table, ids: AbstractSet[str]) -> pa.Table:
    if not ids or not table.num_rows:
        return table
    return table.filter(pc.invert(pc.is_in(table.column("trial_id"), pa.array(sorted(ids), pa.string()))))


def _cost(table: pa.Table) -> float:
    return float(sum(v for v in table.column("cost_usd").to_pylist() if v is not None))


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
