"""Replayed grades (apiflow.agent.grades): a trial that played as an earlier one did gets its grade,
and the record is exactly the record it gets when graded afresh."""

from __future__ import annotations

import copy
import hashlib
import pickle
from typing import Any

import numpy as np
import pytest

from apiflow.agent import TrialSpec, trial_seed
from apiflow.agent import trial as agent_trial
from apiflow.agent.grades import GradeMemo
from apiflow.agent.replay import Replay
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.exact import exact_bytes, exact_digest
from apiflow.models import OFFLINE_MODELS, make_model
from apiflow.models.adversarial import ADVERSARY_MODELS
from apiflow.models.calibrated import calibrated_panel
from apiflow.results.record import WALL_TIME_FIELDS, TrialRecord
from apiflow.runner import play_trial_sync

from .test_trial import _trial, _without_wall_time


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


@pytest.fixture
def replay() -> Replay:
    """One run's replay, fresh for each test."""
    return Replay()


def _exactly(record: TrialRecord) -> tuple[dict[str, Any], str]:
    """The record without its wall-time fields, and the verifier with its types (``repr`` tells
    ``1`` from ``1.0`` and ``True``, a list from a tuple; the JSON does not)."""
    return _without_wall_time(record), repr(record.verifier)


def test_replayed_grades_change_no_record(bank: Bank) -> None:
    """Every offline model, adversary and calibrated sim on every sample task, two epochs: graded
    afresh (no replay) and with one run's replay shared, the records are the same,
    and most of the shared run's grades were replayed (the sims play alike)."""
    models = (*OFFLINE_MODELS, *ADVERSARY_MODELS, *calibrated_panel())
    plays = [(t, m, e) for e in (1, 2) for t in sorted(bank.tasks) for m in models]
    alone = [_exactly(_trial(bank, task_id, model_name, epoch=epoch)) for task_id, model_name, epoch in plays]
    replay = Replay()
    shared = [
        _exactly(_trial(bank, task_id, model_name, epoch=epoch, replay=replay))
        for task_id, model_name, epoch in plays
    ]
    memo = replay.grades
    assert memo.hits + memo.misses == len(plays)
    assert memo.hits > len(plays) // 2, memo.stats()
    assert shared == alone
    passed = [data["passed"] for data, _ in shared]
    assert passed.count(True) and passed.count(False)  # both verdicts were replayed and compared


def test_a_hit_gets_a_verifier_of_its_own(bank: Bank, replay: Replay) -> None:
    first = _trial(bank, "sample-w01-chain-1to07", replay=replay)
    second = _trial(bank, "sample-w01-chain-1to07", replay=replay)
    assert replay.grades.stats() == {"hits": 1, "misses": 1, "entries": 1}
    assert second.verifier == first.verifier
    assert second.verifier is not None and first.verifier is not None
    second.verifier["metadata"]["predicates"].clear()  # a caller changing its record's verifier ...
    second.verifier["value"] = "C" if second.verifier["value"] == "I" else "I"
    third = _trial(bank, "sample-w01-chain-1to07", replay=replay)
    assert third.verifier == first.verifier  # ... changes no later record
    assert replay.grades.hits == 2


def test_another_epoch_or_seed_is_graded_afresh(bank: Bank, replay: Replay) -> None:
    _trial(bank, "sample-w01-chain-1to07", epoch=1, replay=replay)
    _trial(bank, "sample-w01-chain-1to07", epoch=2, replay=replay)
    _trial(bank, "sample-w01-chain-1to07", epoch=1, seed=8, replay=replay)
    assert replay.grades.stats() == {"hits": 0, "misses": 3, "entries": 3}


def test_another_rule_set_is_graded_afresh(bank: Bank, replay: Replay, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _trial(bank, "sample-w01-chain-1to07", replay=replay)
    monkeypatch.setattr(agent_trial, "GRADING_RULES", "published-1.0")
    second = _trial(bank, "sample-w01-chain-1to07", replay=replay)
    assert replay.grades.hits == 0
    assert first.verifier is not None and second.verifier is not None
    assert (first.verifier["metadata"]["rules"], second.verifier["metadata"]["rules"]) == (
        "apiflow-1.1",
        "published-1.0",
    )


def test_a_reloaded_bank_is_graded_afresh(bank: Bank, replay: Replay) -> None:
    """The setup is compared by identity: equal tasks and worlds of another load are other objects."""
    _trial(bank, "sample-w01-chain-1to07", replay=replay)
    _trial(load_bank(DEFAULT_BANK), "sample-w01-chain-1to07", replay=replay)
    assert replay.grades.hits == 0


_HELD = (object(), object())


@pytest.mark.parametrize(
    "one, other",
    [
        (([], [{"n": 1}]), ([], [{"n": 1.0}])),
        (([], [{"n": 1}]), ([], [{"n": True}])),
        (([], [{"n": 0.0}]), ([], [{"n": -0.0}])),
        (([], [{"n": [1]}]), ([], [{"n": (1,)}])),
        (([], [{"n": "1"}]), ([], [{"n": 1}])),
        (([], [{"n": b"1"}]), ([], [{"n": bytearray(b"1")}])),
        (([], [{"a": 1, "b": 2}]), ([], [{"b": 2, "a": 1}])),
        # The same messages after other calls: what the toolbox ran is part of the key.
        ([("write", {"content": 1})], [{"role": "user"}]),
        ([("write", {"content": 2})], [{"role": "user"}]),
    ],
)
def test_keys_tell_apart_what_equality_would_not(one: Any, other: Any) -> None:
    assert GradeMemo.key(_HELD, (1, 2, 3), one) != GradeMemo.key(_HELD, (1, 2, 3), other)


def test_keys_name_the_setup() -> None:
    played: Any = ([], [{"role": "user", "content": "x"}])
    key = GradeMemo.key(_HELD, (1, 2, 3), played)
    assert key == GradeMemo.key(_HELD, (1, 2, 3), copy.deepcopy(played))  # equal values, new objects
    assert key != GradeMemo.key(_HELD, (1, 2, 4), played)
    assert key != GradeMemo.key((object(), _HELD[1]), (1, 2, 3), played)


class _Str(str):
    pass


@pytest.mark.parametrize("odd", [_Str("x"), np.float64(1.0), np.int64(1), object(), 1j, len, Ellipsis])
def test_values_other_than_exact_built_in_data_are_not_keyed(odd: Any) -> None:
    """A subclass, a numpy scalar (which ``marshal`` would write as plain bytes), an object: such a
    trial is graded, never looked up."""
    assert GradeMemo.key(_HELD, (), ([], [{"x": odd}])) is None
    assert exact_bytes({"x": odd}) is None


def test_equal_values_are_equal_bytes_however_they_share_objects() -> None:
    shared = [1, "x"]
    assert exact_bytes({"a": shared, "b": shared}) == exact_bytes({"a": [1, "x"], "b": [1, "x"]})
    looped: dict[str, Any] = {}
    looped["self"] = looped
    assert exact_bytes(looped) is None  # a cycle has no exact bytes


def test_exact_bytes_round_trip_with_their_types() -> None:
    value = [1, 1.0, True, None, "é", b"x", bytearray(b"x"), (1,), [1], {1}, frozenset({1}), -0.0, 2**80]
    encoded = exact_bytes(value)
    assert encoded is not None and repr(pickle.loads(encoded)) == repr(value)


def test_an_unkeyed_trial_is_graded_not_looked_up(bank: Bank, replay: Replay) -> None:
    """A model whose text is a ``str`` subclass (a provider adapter's own type) still gets its grade."""
    from apiflow.models.base import ModelOutput

    class Odd:
        model_api = "odd/odd"

        async def generate(self, messages: Any, tools: Any, config: Any = None) -> ModelOutput:
            return ModelOutput(text=_Str("done"))

    task = bank.task("sample-w01-chain-1to07")
    record = _trial(bank, task.id, model=Odd(), replay=replay)
    assert record.verdict == "I" and replay.grades.stats() == {"hits": 0, "misses": 0, "entries": 0}


def test_held_objects_live_as_long_as_their_entry() -> None:
    """A key names objects by id; the entry keeps them alive, so no other object takes those ids."""
    import gc
    import weakref

    from apiflow.grading.verdict import Grade

    class Held:
        pass

    memo, held = GradeMemo(max_entries=1), (Held(),)
    alive = weakref.ref(held[0])
    grade: Any = Grade(*([None] * len(Grade.__slots__)))
    object.__setattr__(grade, "verifier", {})
    memo.put(GradeMemo.key(held, (), ([], [])), held, grade)
    del held
    gc.collect()
    assert alive() is not None
    memo.put(GradeMemo.key((), (), ([], [])), (), grade)  # the first entry leaves, and its objects
    gc.collect()
    assert alive() is None


def test_entries_are_bounded() -> None:
    from apiflow.grading.verdict import Grade

    memo = GradeMemo(max_entries=2)
    held = (object(),)
    grade: Any = Grade(*([None] * len(Grade.__slots__)))
    object.__setattr__(grade, "verifier", {"value": "C"})
    keys = [GradeMemo.key(held, (i,), ([], [])) for i in range(3)]
    for key in keys:
        memo.put(key, held, grade)
    assert len(memo) == 2 and memo.get(keys[0]) is None  # the least recently used left
    hit = memo.get(keys[2])
    assert hit is not None and hit.verifier == {"value": "C"} and hit.verifier is not grade.verifier


def test_records_of_a_real_run_keep_their_wall_time_fields(bank: Bank, replay: Replay) -> None:
    """A replayed grade takes nothing else from the first trial: the second record is its own."""
    task = bank.task("sample-w01-chain-1to07")
    records = [
        play_trial_sync(
            TrialSpec(
                task=task, world=bank.world_of(task), seed=7, epoch=1, bank_name=bank.name,
                bank_hash=bank.hash, run_id=run_id, model_slug=slug,
            ),
            make_model("apiflow/oracle", task, trial_seed(7, task.id, 1)), replay=replay,
        )
        for run_id, slug in (("run-a", "slug-a"), ("run-b", "slug-b"))
    ]
    assert replay.grades.hits == 1
    assert [r.provenance.run_id for r in records] == ["run-a", "run-b"]
    assert [r.model for r in records] == ["slug-a", "slug-b"]
    assert records[0].apiflow.trial_id != records[1].apiflow.trial_id
    assert all(field for field in WALL_TIME_FIELDS)


def test_a_refused_value_leaves_the_reused_pickler_clean() -> None:
    value = {"a": [1, 2.5, "x" * 5000], "b": (True, None)}
    expected = exact_bytes(value)
    assert expected is not None and repr(pickle.loads(expected)) == repr(value)
    assert exact_bytes({"a": [1, 2.5, "x" * 5000, object()]}) is None  # refused half-way through
    assert exact_bytes(value) == expected
    assert exact_digest(value) == hashlib.sha256(expected).digest()


def test_threads_key_apart() -> None:
    """The pickler is reused per thread: keys made at once in several threads are each their own."""
    import threading

    values = [{"n": n, "text": str(n) * 3000} for n in range(8)]
    want = [exact_digest(v) for v in values]  # one after another, in this thread
    got: dict[int, list[bytes | None]] = {}

    def work(n: int) -> None:
        got[n] = [exact_digest(values[n]) for _ in range(300)]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(got[n] == [want[n]] * 300 for n in range(8))
