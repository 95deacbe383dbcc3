"""Task homes: each task's trials go to one actor while it has work of its own; an actor with none
takes from the fullest shelf; nothing is lost or sent twice."""

from __future__ import annotations

import pytest
from test_dispatch import LOST, _Actor, _DeadRay

from cluster.dispatch import Dispatcher
from cluster.plan import PlannedTrial
from cluster.spec import GridSpec
from cluster.workqueue import WorkQueue


def _trial(n: int, task: str, epoch: int = 1) -> PlannedTrial:
    return PlannedTrial(f"{n:032x}", 0, task, "w01", epoch, 0)


def test_tasks_are_dealt_to_actors_in_order_of_first_appearance():
    trials = [_trial(0, "a"), _trial(1, "b"), _trial(2, "a"), _trial(3, "c"), _trial(4, "b"), _trial(5, "d")]
    queue = WorkQueue(trials, 2)
    assert [queue.home(t) for t in "abcd"] == [0, 1, 0, 1]
    assert [t.task_id for t in queue.shelves[0]] == ["a", "a", "c"]
    assert [t.task_id for t in queue.shelves[1]] == ["b", "b", "d"]
    assert len(queue) == 6 and sorted(queue, key=lambda t: t.trial_id) == trials


def test_an_actor_takes_its_own_shelf_first_then_the_fullest_other():
    queue = WorkQueue([_trial(i, t) for i, t in enumerate("abaaaca")], 3)  # a -> 0, b -> 1, c -> 2
    own = queue.shelf_for(1)
    assert own is queue.shelves[1]
    assert queue.take(own).task_id == "b" and len(queue) == 6
    assert queue.peek(1) == queue.shelves[0][0]  # its own is empty: the fullest (a's, five left)
    queue.take(queue.shelf_for(1))
    assert [len(s) for s in queue.shelves] == [4, 0, 1]
    while queue:
        queue.take(queue.shelf_for(2))
    assert queue.shelf_for(0) is None and queue.peek(2) is None and not queue


def test_a_trial_put_back_goes_to_the_front_of_its_home_shelf():
    trials = [_trial(i, t) for i, t in enumerate("abab")]
    queue = WorkQueue(trials, 2)
    taken = queue.take(queue.shelves[1])
    queue.appendleft(taken)
    assert list(queue.shelves[1]) == [trials[1], trials[3]] and len(queue) == 4


def test_a_queue_needs_an_actor():
    with pytest.raises(ValueError):
        WorkQueue([], 0)


def _offline_spec(out: str) -> GridSpec:
    return GridSpec.model_validate({"name": "t", "models": [{"model": "apiflow/oracle"}], "out": out,
                                    "concurrency": {"batch": 4}})  # fmt: skip


def test_the_dispatcher_sends_each_actor_its_own_tasks_while_they_last(tmp_path):
    # Two actors, two calls each: four batches of four. Six tasks of four trials, interleaved as
    # the run order interleaves them; each actor's batches hold only its tasks until its shelf is empty.
    tasks = ["t0", "t1", "t2", "t3", "t4", "t5"]
    trials = [_trial(i, tasks[i % 6]) for i in range(24)]
    actors = [_Actor(), _Actor()]
    queue = WorkQueue(trials, 2)
    dispatcher = Dispatcher(_DeadRay(), actors, _offline_spec(str(tmp_path)), calls_per_actor=2, window=8, actor_lost=LOST)
    while dispatcher.submit(queue):
        pass
    assert len(queue) == 8
    for index, actor in enumerate(actors):
        sent = {t.task_id for (batch,) in actor.calls for t in batch}
        assert sent == {t for t in tasks if queue.home(t) == index}
    # Actor 1's shelf empties first if it alone is asked: it then takes actor 0's trials.
    dispatcher.per_actor = [2, 0]
    while dispatcher.submit(queue):
        pass
    assert not queue
    sent = [t.trial_id for a in actors for (batch,) in a.calls for t in batch]
    assert sorted(sent) == sorted(t.trial_id for t in trials)  # each trial sent once
