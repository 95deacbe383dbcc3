"""Turn-wave batching against an in-memory provider: gathering, resubmission, the deadline, and the
journal that makes a crashed worker's batches count once (apiflow.models.turn_batcher)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apiflow.models.turn_batcher import BatchMiss, BatchSettings, TurnBatcher
from apiflow.results.batch_journal import BatchJournal, custom_id
from apiflow.results.objects import ObjectFolder

FAST = BatchSettings(size=4, wait_s=0.02, poll_s=0.005, deadline_s=5.0)


class FakeBatches:
    """A provider's batch tier in memory: a batch ends after ``polls`` status checks; requests may fail."""

    route = "fake/model"

    def __init__(self, polls: int = 2, fail: dict[str, int] | None = None, hang: bool = False) -> None:
        self.polls, self.hang = polls, hang
        self.fail = dict(fail or {})  # custom id -> times it errors before it succeeds
        self.batches: dict[str, dict[str, Any]] = {}
        self.paid: list[str] = []  # every custom id the provider ran, once per run

    async def submit(self, key: str, requests: list[dict[str, Any]]) -> str:
        batch_id = f"batch_{len(self.batches)}"
        self.batches[batch_id] = {"key": key, "requests": requests, "checks": 0, "cancelled": False}
        return batch_id

    async def ended(self, batch_id: str) -> bool:
        batch = self.batches[batch_id]
        batch["checks"] += 1
        return batch["cancelled"] or (not self.hang and batch["checks"] >= self.polls)

    async def results(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        out = {}
        for request in batch["requests"]:
            cid = request["custom_id"]
            if batch["cancelled"]:
                out[cid] = {"ok": False, "kind": "canceled", "error": "cancelled"}
            elif self.fail.get(cid, 0) > 0:
                self.fail[cid] -= 1
                out[cid] = {"ok": False, "kind": "errored", "error": "overloaded"}
            else:
                self.paid.append(cid)
                out[cid] = {"ok": True, "body": {"echo": request["body"]["n"]}}
        return out

    async def cancel(self, batch_id: str) -> None:
        self.batches[batch_id]["cancelled"] = True

    async def find(self, key: str, custom_ids: list[str], since: float) -> str | None:
        return next((b for b, v in self.batches.items() if v["key"] == key), None)


def ids(n: int, trial: str = "t") -> list[str]:
    return [custom_id(trial, i, {"n": i}) for i in range(n)]


async def ask(batcher: TurnBatcher, n: int, trial: str = "t") -> list[Any]:
    calls = [batcher.call(cid, {"n": i}) for i, cid in enumerate(ids(n, trial))]
    return await asyncio.gather(*calls, return_exceptions=True)


def test_waiting_turns_go_as_one_batch_and_each_trial_gets_its_own_answer():
    api = FakeBatches()
    batcher = TurnBatcher(api, None, FAST)
    answers = asyncio.run(ask(batcher, 7))
    assert answers == [{"echo": i} for i in range(7)]
    sizes = sorted(len(b["requests"]) for b in api.batches.values())
    assert sizes == [3, 4]  # a full batch at once, the rest after the wait
    assert batcher.stats["answered"] == 7 and batcher.stats["missed"] == 0


def test_a_failed_request_is_resubmitted_once_then_left_to_the_sync_tier():
    first, second = ids(2)
    api = FakeBatches(fail={first: 1, second: 2})
    answers = asyncio.run(ask(TurnBatcher(api, None, FAST), 2))
    assert answers[0] == {"echo": 0}
    assert isinstance(answers[1], BatchMiss) and "errored" in str(answers[1])
    assert len(api.batches) == 2 and [len(b["requests"]) for b in api.batches.values()] == [2, 2]


def test_a_batch_past_its_deadline_is_cancelled_before_its_turns_go_sync():
    api = FakeBatches(hang=True)
    settings = BatchSettings(size=2, wait_s=0.01, poll_s=0.005, deadline_s=0.03)
    answers = asyncio.run(ask(TurnBatcher(api, None, settings), 2))
    assert all(isinstance(a, BatchMiss) and "canceled" in str(a) for a in answers)
    assert all(b["cancelled"] for b in api.batches.values())
    assert api.paid == []  # nothing the sync tier now sends was run by the batch


def test_a_resumed_worker_reads_collected_results_from_the_journal(tmp_path):
    api = FakeBatches()
    journal = BatchJournal(ObjectFolder(str(tmp_path)))
    asyncio.run(ask(TurnBatcher(api, journal, FAST), 4))
    again = TurnBatcher(api, journal, FAST)
    assert asyncio.run(ask(again, 4)) == [{"echo": i} for i in range(4)]
    assert len(api.batches) == 1 and len(api.paid) == 4  # nothing sent twice, nothing paid twice
    assert again.stats["from_journal"] == 4


def test_a_resumed_worker_reattaches_to_a_batch_still_running(tmp_path):
    api = FakeBatches(polls=10**9)
    journal = BatchJournal(ObjectFolder(str(tmp_path)))

    async def crash_while_running() -> None:
        lost = TurnBatcher(api, journal, FAST)
        calls = [asyncio.ensure_future(lost.call(cid, {"n": i})) for i, cid in enumerate(ids(4))]
        while not api.batches:
            await asyncio.sleep(0.005)
        await lost.close()  # the worker dies; its batch runs on at the provider
        for call in calls:
            call.cancel()

    asyncio.run(crash_while_running())
    api.polls = 0
    again = TurnBatcher(api, journal, FAST)
    assert asyncio.run(ask(again, 4)) == [{"echo": i} for i in range(4)]
    assert len(api.batches) == 1 and again.stats["reattached"] == 4


class LosesBatchIds(BatchJournal):
    """A worker killed between the provider's answer and the journal's write of the batch id."""

    def write_submitted(self, key: str, batch_id: str) -> bool:
        raise RuntimeError("killed")


@pytest.mark.parametrize("reached_provider", [True, False])
def test_an_unconfirmed_submission_is_looked_for_before_anything_is_sent_again(tmp_path, reached_provider):
    api = FakeBatches()
    folder = ObjectFolder(str(tmp_path))
    answers = asyncio.run(ask(TurnBatcher(api, LosesBatchIds(folder), FAST), 4))
    assert all(isinstance(a, BatchMiss) for a in answers)  # that worker's trials ended unstored
    if not reached_provider:
        api.batches.clear()
    again = TurnBatcher(api, BatchJournal(folder), FAST)
    assert asyncio.run(ask(again, 4)) == [{"echo": i} for i in range(4)]
    assert len(api.batches) == 1  # found at the provider, or sent now for the first time
    assert again.stats["reattached"] == (4 if reached_provider else 0)


def test_custom_ids_differ_by_trial_and_turn_and_fit_anthropic():
    body = {"messages": [{"role": "user", "content": "same prompt"}]}
    a, b, c = custom_id("trial-1", 0, body), custom_id("trial-2", 0, body), custom_id("trial-1", 1, body)
    assert len({a, b, c}) == 3 and a == custom_id("trial-1", 0, dict(body))
    assert all(len(x) <= 64 and x.isalnum() for x in (a, b, c))


class SlowSubmit(FakeBatches):
    async def submit(self, key: str, requests: list[dict[str, Any]]) -> str:
        await asyncio.sleep(0.1)
        return await super().submit(key, requests)


def test_a_turn_that_arrives_while_a_batch_is_being_submitted_is_sent_too():
    # It saw the timer (the flush under way) not done and armed none: it waited for a next turn
    # that, at a run's end, never comes.
    batcher = TurnBatcher(SlowSubmit(), None, BatchSettings(size=10, wait_s=0.01, poll_s=0.005))
    first, second = ids(2)

    async def staggered() -> list[Any]:
        early = asyncio.ensure_future(batcher.call(first, {"n": 0}))
        await asyncio.sleep(0.05)  # the first turn's batch is being submitted now
        return await asyncio.wait_for(asyncio.gather(early, batcher.call(second, {"n": 1})), timeout=5)

    assert asyncio.run(staggered()) == [{"echo": 0}, {"echo": 1}]


def test_a_replayed_turn_the_journal_holds_is_answered_without_waiting_for_a_batch(tmp_path):
    api = FakeBatches()
    journal = BatchJournal(ObjectFolder(str(tmp_path)))
    asyncio.run(ask(TurnBatcher(api, journal, FAST), 4))
    again = TurnBatcher(api, journal, BatchSettings(size=100, wait_s=0.01, poll_s=0.005))
    enqueued: list[str] = []
    enqueue = again._enqueue
    again._enqueue = lambda turn: (enqueued.append(turn.custom_id), enqueue(turn))[1]  # type: ignore[method-assign]

    async def one_by_one() -> list[Any]:  # as a trial asks: a turn after the one before
        return [await again.call(cid, {"n": i}) for i, cid in enumerate(ids(4))]

    assert asyncio.run(one_by_one()) == [{"echo": i} for i in range(4)]
    assert len(enqueued) == 1  # only the first waited for a flush (it read the journal)
    assert again.stats["from_journal"] == 4 and len(api.batches) == 1
