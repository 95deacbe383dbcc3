"""The adversaries: every family is exercised, scripts are deterministic, cards never name the answer."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apiflow.authoring.audit import sample_tasks
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.errors import UsageError
from apiflow.grading.answer import compare
from apiflow.models import make_model
from apiflow.models.adversarial import ADVERSARIES, ADVERSARY_MODELS, adversary_plan, adversary_rng
from apiflow.models.adversarial.cards import fabricated, lookalike
from apiflow.models.base import GenerateConfig

FAMILIES = {
    "answer-key replay",
    "skipped steps",
    "decoy / legacy route",
    "wrong entity",
    "stale seeded value",
    "shotgun card",
    "fabricated value",
    "type/normalisation game",
    "abstention abuse",
}


@pytest.fixture(scope="module")
def tasks():
    sample = load_bank(DEFAULT_BANK)
    v1 = load_bank(DEFAULT_BANK.parent / "v1")
    return list(sample.tasks.values()) + sample_tasks(v1, 40)


def test_every_family_of_the_issue_has_an_adversary() -> None:
    assert {a.family for a in ADVERSARIES.values()} == FAMILIES
    assert all(a.labour for a in ADVERSARIES.values())


def test_every_adversary_has_tasks_to_cheat_on(tasks) -> None:
    for name in ADVERSARIES:
        applicable = [t for t in tasks if adversary_plan(name, t, 7) is not None]
        assert applicable, f"{name} never applies: the audit would not exercise it"


def _script(model) -> list[str]:
    loop = asyncio.new_event_loop()
    out = []
    try:
        for _ in range(len(model.turns) + 1):
            turn = loop.run_until_complete(model.generate([], [], GenerateConfig()))
            out.append(
                json.dumps([turn.text, [(c.name, c.arguments) for c in turn.tool_calls]], sort_keys=True)
            )
    finally:
        loop.close()
    return out


def test_scripts_are_deterministic_from_task_and_seed(tasks) -> None:
    varied = set()
    for name in ADVERSARY_MODELS:
        for task in tasks[:20]:
            one, two = _script(make_model(name, task, 5)), _script(make_model(name, task, 5))
            assert one == two, (name, task.id)
            if _script(make_model(name, task, 6)) != one:
                varied.add(name)
    # seeded choices (the skipped step, the field a card game hits, the shotgun variant) move with the seed
    assert {"apiflow/adv:skip-step", "apiflow/adv:fabricate", "apiflow/adv:shotgun"} <= varied


def test_registry_names_and_refusals(tasks) -> None:
    assert make_model("apiflow/adv:answer-key", tasks[0], 1).model_api == "apiflow/adv:answer-key"
    with pytest.raises(UsageError, match="unknown adversary 'nope'"):
        make_model("apiflow/adv:nope", tasks[0], 1)


def test_a_task_without_the_cheat_gets_the_answer_key_script(tasks) -> None:
    task = next(t for t in tasks if adversary_plan("stale-seed", t, 1) is None)
    model = make_model("apiflow/adv:stale-seed", task, 1)
    assert len(model.turns) == 1 and not model.turns[0].calls and "```json" in model.turns[0].text


ID = st.from_regex(r"\A[a-z]{2,5}-[0-9a-f]{4}-[0-9a-f]{4}\Z")
NUMBER = st.one_of(
    st.integers(-10_000, 10_000), st.floats(-1e4, 1e4, allow_nan=False).map(lambda x: round(x, 2))
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    value=st.one_of(ID, st.text(min_size=1, max_size=20).filter(lambda s: any(c.isalnum() for c in s))),
    seed=st.integers(0, 2**32),
)
def test_fabricated_and_lookalike_strings_never_pass(value: str, seed: int) -> None:
    rng = adversary_rng("fabricate", "t", seed)
    assert not compare("string", fabricated(value, rng), value).passed
    assert not compare("string", lookalike(value), value).passed


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(value=NUMBER, seed=st.integers(0, 2**32))
def test_fabricated_and_lookalike_numbers_never_pass_typed(value: float, seed: int) -> None:
    rng = adversary_rng("fabricate", "t", seed)
    assert not compare("numeric", fabricated(value, rng), value, typed=True).passed
    assert not compare("numeric", lookalike(value), value, typed=True).passed


def test_bool_for_one_passes_published_but_not_typed() -> None:
    # the type game a count of one invites: Python reads True as 1
    assert compare("numeric", lookalike(1), 1).passed
    assert not compare("numeric", lookalike(1), 1, typed=True).passed
