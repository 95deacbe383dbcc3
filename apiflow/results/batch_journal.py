"""The result store's journal of provider batches: what was sent, under which batch id, what came back.

Money on the batch tier is spent when a provider runs a batch, not when a trial is stored, so the
store keeps each batch's life in three create-only objects under ``turnbatches/``:

* ``<key>.requests.json.gz``, then ``<key>.intent.json``, before submission: the request bodies, and
  the custom ids with the route and when (small: what a resuming worker lists);
* ``<key>.submitted.json`` once the provider named the batch: its id;
* ``<key>.results.json.gz`` once the batch ended: every result line, by custom id.

A custom id is a digest of the trial, the turn and the request body, so a trial replayed on
resume sends the very same ids, and the journal answers them: from a collected result (paid once,
read again), or by re-attaching to the batch still running (docs/design/048-batch-tier.md). The
key is a digest of the batch's custom ids: a re-submission of the same requests finds its own
intent. Nothing here talks to a provider.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from apiflow.results.objects import ObjectFolder

FOLDER = "turnbatches"
REQUESTS = ".requests.json.gz"
INTENT = ".intent.json"
SUBMITTED = ".submitted.json"
RESULTS = ".results.json.gz"


def custom_id(trial_id: str, turn: int, body: dict[str, Any]) -> str:
    """The request's id in a batch: the same trial, turn and body give the same id (40 hex digits:
    within Anthropic's 64 characters of ``[a-zA-Z0-9_-]``)."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    return hashlib.sha256(f"{trial_id}\0{turn}\0{digest}".encode()).hexdigest()[:40]


def batch_key(custom_ids: list[str]) -> str:
    """A batch's journal key: a digest of its request ids, in order."""
    return hashlib.sha256("\n".join(custom_ids).encode()).hexdigest()[:32]


@dataclass(slots=True)
class Entry:
    """One batch as the journal holds it."""

    key: str
    route: str
    custom_ids: list[str]
    batch_id: str | None = None
    collected: bool = False
    """The ended batch's results are recorded (read them with ``BatchJournal.results``: a grid's
    journal holds every answer it paid for, too much to keep in memory)."""
    created_at: float = 0.0


class BatchJournal:
    """The ``turnbatches/`` objects of one result store.

    Args:
        objects: The store's object folder (local or an object store).
    """

    def __init__(self, objects: ObjectFolder) -> None:
        self.objects = objects

    def _path(self, key: str, suffix: str) -> str:
        return self.objects.path(FOLDER, key + suffix)

    # ---- writes (create-only: a second writer of the same key finds the first's object) ----
    def write_intent(self, key: str, route: str, requests: list[dict[str, Any]], created_at: float) -> None:
        """Record the requests before they are submitted (``requests``: ``{"custom_id", "body"}``)."""
        self.objects.create_only(self._path(key, REQUESTS), gzip.compress(json.dumps(requests).encode(), 6))
        ids = [r["custom_id"] for r in requests]
        data = {"key": key, "route": route, "created_at": created_at, "custom_ids": ids}
        self.objects.create_only(self._path(key, INTENT), json.dumps(data).encode())

    def write_submitted(self, key: str, batch_id: str) -> bool:
        """Record the provider's batch id; False when another writer recorded one first."""
        return self.objects.create_only(
            self._path(key, SUBMITTED), json.dumps({"batch_id": batch_id}).encode()
        )

    def write_results(self, key: str, results: dict[str, dict[str, Any]]) -> None:
        """Record what the ended batch returned, by custom id."""
        self.objects.create_only(self._path(key, RESULTS), gzip.compress(json.dumps(results).encode(), 6))

    # ---- reads ------------------------------------------------------------------------
    def entries(self, known: dict[str, Entry] | None = None) -> dict[str, Entry]:
        """Every batch on record, with its id where known and whether it is collected (one listing per kind).

        ``known``: entries read before; only what they lack is fetched (a worker refreshes its view
        before each submission, to find the batches a lost worker sent for the trials it now plays).
        """
        found: dict[str, Entry] = dict(known or {})
        fresh = [p for p in self.objects.list(FOLDER, INTENT) if _key(p, INTENT) not in found]
        for _, data in self.objects.cat_many(fresh):
            intent = json.loads(data)
            found[intent["key"]] = Entry(intent["key"], intent["route"], intent["custom_ids"],
                                         created_at=intent["created_at"])  # fmt: skip
        for path, data in self.objects.cat_many(
            [
                p
                for p in self.objects.list(FOLDER, SUBMITTED)
                if found.get(_key(p, SUBMITTED), _DONE).batch_id is None
            ]
        ):
            found[_key(path, SUBMITTED)].batch_id = json.loads(data)["batch_id"]
        for path in self.objects.list(FOLDER, RESULTS):  # listed, not read: ``results`` reads one
            if _key(path, RESULTS) in found:
                found[_key(path, RESULTS)].collected = True
        return found

    def results(self, key: str) -> dict[str, dict[str, Any]]:
        """The result lines recorded for a collected batch, by custom id."""
        return dict(json.loads(gzip.decompress(self.objects.cat(self._path(key, RESULTS)))))

    def requests(self, key: str) -> list[dict[str, Any]]:
        """The request bodies recorded for ``key`` (an audit, or a hand re-submission)."""
        return list(json.loads(gzip.decompress(self.objects.cat(self._path(key, REQUESTS)))))

    def submitted_id(self, key: str) -> str | None:
        """The batch id on record for ``key`` (None: not submitted, or not known to be)."""
        try:
            return str(json.loads(self.objects.cat(self._path(key, SUBMITTED)))["batch_id"])
        except FileNotFoundError:
            return None


def _key(path: str, suffix: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(suffix)


_DONE = Entry("", "", [], batch_id="-", collected=True)
"""Stands for a key with no intent, or one already complete: nothing more to read for it."""
