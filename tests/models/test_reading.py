"""The canary reader a scripted model swaps per-trial forms with (apiflow.models.reading)."""

from __future__ import annotations

import json

import pytest

from apiflow.models import reading
from apiflow.models.reading import CanaryReader, canary_reader

FORMS = {"smk-e36f-0db4": "smk-e36f-0db4~k3f9q2", "smk-e36f": "smk-e36f~aaaaaa"}


def test_trials_that_learned_alike_share_one_reader() -> None:
    reader = canary_reader(FORMS)
    assert canary_reader(dict(reversed(FORMS.items()))) is reader  # the same forms, in another order
    assert canary_reader({**FORMS, "smk-e36f": "smk-e36f~bbbbbb"}) is not reader


def test_a_swapped_value_is_worked_out_once_per_text_and_equals_the_plain_swap() -> None:
    reader = canary_reader(FORMS)
    value = {"id": "smk-e36f-0db4", "other": ["smk-e36f", "smk-e36f~zzzzzz", "x-smk-e36f-0db4y"]}
    text = json.dumps(value, ensure_ascii=False)
    first = reader.apply_dumped(value, text)
    plain = CanaryReader(FORMS).apply_dumped(value, text)  # a reader of its own: worked out afresh
    assert (
        first
        == plain
        == {
            "id": "smk-e36f-0db4~k3f9q2",
            "other": ["smk-e36f~aaaaaa", "smk-e36f~zzzzzz", "x-smk-e36f-0db4~k3f9q2y"],
        }
    )
    assert reader.apply_dumped(json.loads(text), text) is first  # shared, as the script's objects are
    assert value["id"] == "smk-e36f-0db4"  # the caller's object is never changed


def test_arguments_naming_nothing_learned_come_back_as_they_were_handed() -> None:
    reader = canary_reader(FORMS)
    for _ in range(2):
        value = {"url": "/v3/blocks"}
        assert reader.apply_dumped(value, json.dumps(value)) is value


def test_readers_held_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "_READERS_HELD", 2)
    monkeypatch.setattr(reading, "_readers", type(reading._readers)())
    first = canary_reader({"a": "a~1"})
    canary_reader({"b": "b~1"})
    assert canary_reader({"a": "a~1"}) is first  # used again: now the most recent
    canary_reader({"c": "c~1"})  # "b" leaves
    assert len(reading._readers) == 2 and canary_reader({"a": "a~1"}) is first
