"""A worker's batch tier: one turn batcher per ``tier: batch`` model, shared by the trials it plays.

The batchers live as long as the worker, so the turns of all its live trials of a model meet in
the same batches; each trial gets its own wire (``BatchWire``) into them. The journal is the
grid's result store, so a worker that replaces a lost one finds the batches its trials were
waiting on (``apiflow.models.turn_batcher``; docs/design/048-batch-tier.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiflow.models.batch_transport import BatchTransport
from apiflow.models.provider_batches import batch_api, endpoint_of, provider_client, wire_library
from apiflow.models.turn_batcher import BatchSettings, TurnBatcher
from apiflow.results.batch_journal import BatchJournal
from cluster.spec import GridSpec


@dataclass(slots=True)
class BatchWire:
    """One trial's way to the batch tier: the transport and the litellm client object over it."""

    transport: BatchTransport
    client: Any


class BatchTiers:
    """The turn batchers of one worker (made on first use, inside the worker's event loop)."""

    def __init__(self, spec: GridSpec, journal: BatchJournal) -> None:
        self.spec = spec
        self.journal = journal
        self.batchers: dict[int, TurnBatcher] = {}
        self.sync: dict[str, Any] = {}
        """The synchronous wire per httpx library, shared by the worker's trials."""

    def batcher(self, index: int) -> TurnBatcher:
        if index not in self.batchers:
            model = self.spec.models[index]
            settings = BatchSettings(**model.batching.model_dump(exclude={"expected_s"}))
            self.batchers[index] = TurnBatcher(batch_api(model.model, model.params), self.journal, settings)
        return self.batchers[index]

    def wire(self, index: int, trial_id: str) -> BatchWire:
        """A new trial's wire into model ``index``'s batches."""
        model = self.spec.models[index]
        http = wire_library(model.model)
        sync = self.sync.setdefault(http.__name__, http.AsyncHTTPTransport())
        transport = BatchTransport(self.batcher(index), trial_id, endpoint_of(model.model), sync, http)
        return BatchWire(transport, provider_client(model.model, model.params, transport))

    def stats(self) -> dict[str, int]:
        """Counts summed over the worker's batchers (batches, turns answered, re-read, missed...)."""
        total: dict[str, int] = {}
        for batcher in self.batchers.values():
            for key, value in batcher.stats.items():
                total[key] = total.get(key, 0) + value
        return total

    async def close(self) -> None:
        for batcher in self.batchers.values():
            await batcher.close()
        for sync in self.sync.values():
            await sync.aclose()
