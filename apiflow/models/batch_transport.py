"""The batch tier under litellm: an httpx transport that answers a trial's model calls from batches.

litellm builds the provider's request exactly as it would for the synchronous endpoint and parses
the provider's answer exactly as it would from it; only the wire between them changes. This
transport takes the request body litellm built, sends it as one request of a provider batch
(``turn_batcher``), and returns the batch's answer for it as the endpoint's HTTP response. So a
turn on the batch tier is the same request and the same parsed turn as on the synchronous tier,
for every route litellm sends over httpx. A turn the batch tier does not answer goes out on
``sync``, the synchronous wire, unchanged (``last_tier`` then says so, and it is priced so).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from apiflow.models.turn_batcher import BatchMiss, TurnBatcher
from apiflow.results.batch_journal import custom_id

BATCH = "batch"


class BatchTransport:
    """One trial's wire to the batch tier: an httpx transport (``handle_async_request``).

    The OpenAI SDK sends through ``httpx2``, litellm's own handler through ``httpx``: the transport
    answers in the library its client speaks (``http``), and ``sync`` is that library's wire too, so
    a timeout on it is the exception its client maps.

    Args:
        batcher: The worker's batcher for this route.
        trial_id: The trial, part of every custom id (two epochs' identical first turns stay two).
        endpoint: The path the route's batches stand for (``/v1/chat/completions``, ``/v1/messages``);
            any other request (a preflight, a models listing) goes out on ``sync``.
        sync: The synchronous wire (an ``http.AsyncHTTPTransport``).
        http: ``httpx`` or ``httpx2``.
    """

    def __init__(
        self, batcher: TurnBatcher, trial_id: str, endpoint: str, sync: Any, http: ModuleType
    ) -> None:
        self.http = http
        self.batcher = batcher
        self.trial_id = trial_id
        self.endpoint = endpoint
        self.sync = sync
        self.turn = 0
        """The turn being asked (the client sets it: a retried call keeps its custom id)."""
        self.last_tier: str | None = None
        """``batch`` when the last call was answered by a batch, None when it went out on ``sync``."""
        self.missed: list[str] = []

    async def handle_async_request(self, request: Any) -> Any:
        self.last_tier = None
        if request.method != "POST" or not request.url.path.endswith(self.endpoint):
            return await self.sync.handle_async_request(request)
        raw = await request.aread()
        body = json.loads(raw)
        try:
            answer = await self.batcher.call(custom_id(self.trial_id, self.turn, body), body)
        except BatchMiss as miss:
            self.missed.append(str(miss))
            return await self.sync.handle_async_request(request)
        self.last_tier = BATCH
        return self.http.Response(200, json=answer, request=request)

    async def __aenter__(self) -> BatchTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """The synchronous wire is the worker's, shared by its trials: it outlives this one."""
