"""``TrialRecord.to_json`` through orjson: the very bytes ``json.dumps`` writes, or json.dumps itself."""

from __future__ import annotations

import copy
import json
import random
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest
from conftest import build_record

from apiflow.results.record import _orjson_exact, json_bytes

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "transcripts"


def reference(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def test_published_transcripts_serialise_to_the_same_bytes() -> None:
    files = sorted(FIXTURES.glob("*/*.json"))
    assert len(files) > 20
    for file in files:
        data = json.loads(file.read_bytes())
        assert json_bytes(data) == reference(data), file


def test_played_records_serialise_to_the_same_bytes() -> None:
    from apiflow.agent import TrialSpec, trial_seed
    from apiflow.bank import load_bank
    from apiflow.models import OFFLINE_MODELS, make_model
    from apiflow.runner import play_trial_sync

    bank = load_bank()
    for task in list(bank.tasks.values())[:4]:
        for name in OFFLINE_MODELS:
            model = make_model(name, task, trial_seed(0, task.id, 1))
            record = play_trial_sync(
                TrialSpec(
                    task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                    bank_hash=bank.hash, run_id="json", model_slug=name,
                ),
                model,
            )
            data = record.model_dump(mode="json")
            assert record.to_json_bytes() == reference(data)
            assert record.to_json() == reference(data).decode()


@pytest.mark.parametrize(
    "value",
    [0.0, -0.0, 1e-4, 9.999e-5, 1e-5, 5e-324, 1e16, 9.999999999999998e15, 1e300, float("nan"),
     float("inf"), -float("inf"), 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30, True, None,
     "\x00\x1f\x7f\u2028\u2029\"\\\n\r\t\b\f", "é漢😀", {"k": [1.5, {"n": 1e-7}]}, [], {}],
)  # fmt: skip
def test_awkward_values_match_json_dumps(value: Any) -> None:
    assert json_bytes({"v": value, "list": [value]}) == reference({"v": value, "list": [value]})


def test_floats_across_magnitudes_match_json_dumps() -> None:
    rng = random.Random(11)
    for _ in range(20_000):
        value = rng.choice((-1, 1)) * rng.random() * 10 ** rng.uniform(-9, 20)
        assert json_bytes([value]) == reference([value]), value


def test_what_orjson_would_write_differently_takes_json_dumps() -> None:
    assert not _orjson_exact({"a": [1e-5]}) and not _orjson_exact([float("nan")])
    assert not _orjson_exact({"a": (1, 2)})  # not a plain JSON type: json.dumps decides
    assert _orjson_exact({"a": [1.5, "x", 3, None, True]})
    surrogate = {"text": "\ud800"}
    with pytest.raises(UnicodeEncodeError):
        json_bytes(surrogate)  # as json.dumps(...).encode() does


def test_a_record_with_awkward_values_round_trips_like_before() -> None:
    record = build_record()
    record.messages = [
        {"role": "tool", "content": [{"type": "text", "text": "ok"}], "extra": {"x": 1e-9, "n": 2**70}}
    ]
    assert record.to_json_bytes() == reference(record.model_dump(mode="json"))
    assert record.to_json() == reference(record.model_dump(mode="json")).decode()


class _Kind(StrEnum):
    A = "a"


@pytest.mark.parametrize(
    "value",
    [1.5, 1e-5, 1e16, float("nan"), float("inf"), 2**64, (1, 2), {1: "int key"}, {"t": (1.5, None)},
     _Kind.A, [{"k": _Kind.A}], b"bytes", "é漢😀\u2028", {"deep": [[{"x": [True, False, None]}]]}],
)  # fmt: skip
def test_messages_and_verifier_passed_through_give_model_dumps_bytes(value: Any) -> None:
    # to_json hands messages and verifier to orjson as they are when it can write the record
    # exactly; whatever it cannot must still come out as json.dumps of model_dump(mode="json").
    record = build_record()
    record.messages = [{"role": "tool", "content": "x", "extra": value}, {"role": "user", "content": [value]}]
    record.verifier = {"scores": {"v": value}, "list": [value, 1]}
    record.apiflow.cost_usd = 1e-5 if isinstance(value, float) else 0.25
    expected = reference(record.model_dump(mode="json"))
    assert record.to_json_bytes() == expected
    assert record.to_json() == expected.decode()
    twin = build_record()  # the same content in other objects: the same bytes
    twin.messages, twin.verifier = copy.deepcopy(record.messages), copy.deepcopy(record.verifier)
    twin.apiflow.cost_usd = record.apiflow.cost_usd
    assert twin.to_json_bytes() == expected


def test_a_record_changed_in_place_is_written_anew() -> None:
    """An edit after a first write is in the next one (nothing is kept by object between writes)."""
    record = build_record()
    record.messages = [{"role": "tool", "content": "x", "extra": {"n": 1}}]
    record.to_json_bytes()
    record.messages[0]["extra"]["n"] = 2
    assert record.to_json_bytes() == reference(record.model_dump(mode="json"))
    assert b'"n":2' in record.to_json_bytes()


@pytest.mark.parametrize("other", [1.0, True, "1", [1], 2])
def test_equal_values_of_other_types_get_their_own_json(other: Any) -> None:
    one, two = build_record(), build_record()
    one.messages = [{"role": "tool", "content": "x", "v": 1}]
    two.messages = [{"role": "tool", "content": "x", "v": other}]
    assert one.to_json_bytes() == reference(one.model_dump(mode="json"))
    assert two.to_json_bytes() == reference(two.model_dump(mode="json")) != one.to_json_bytes()


def _exact_reference(value: Any) -> bool:
    """The plain recursive form of ``_orjson_exact`` (what the queue walk must agree with)."""
    kind = type(value)
    if kind is dict:
        return all(_exact_reference(v) for v in value.values())
    if kind is list:
        return all(_exact_reference(v) for v in value)
    if kind is float:
        return value == 0.0 or 1e-4 <= abs(value) < 1e16
    return kind in (str, int, bool, type(None))


class _Kind(StrEnum):
    A = "a"


def _random_value(rng: random.Random, depth: int) -> Any:
    leaves = ["x", 3, True, None, 1.5, 0.0, 1e-5, float("nan"), 2e16, (1, 2), _Kind.A, 10**30, b"b"]
    roll = rng.random()
    if depth > 5 or roll < 0.4:
        # mostly plain leaves, so that whole values pass often enough to test both answers
        return rng.choice(leaves[:5]) if rng.random() < 0.97 else rng.choice(leaves)
    if roll < 0.7:
        return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(5))}
    if roll < 0.97:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return rng.choice((type("D", (dict,), {})(), type("L", (list,), {})()))


def test_queue_walk_agrees_with_the_recursive_check() -> None:
    rng = random.Random(5)
    answers = set()
    for _ in range(5_000):
        value = _random_value(rng, 0)
        expected = _exact_reference(value)
        assert _orjson_exact(value) is expected, value
        answers.add(expected)
    assert answers == {True, False}
    for scalar in ("s", 1, 1e-5, 1.5, float("inf"), None, (1,), _Kind.A):
        assert _orjson_exact(scalar) is _exact_reference(scalar)
