"""Fuzzing the agent loop: a model whose every turn hypothesis draws can never make a trial unscored.

The fake ``ModelClient`` plays drawn turns: random text and reasoning (odd unicode, non-strings,
cards with drawn values), random tool names, random/malformed/huge arguments, many parallel calls,
odd ids, garbage usage and cost. Each trial runs end to end (real sample-bank world, real tools,
real grader) and must end with a model outcome, never ``harness_error``/``provider_error``, with
a record that is valid schema 1.0, writable as UTF-8, reads back to the same bytes, and flattens
into an Arrow row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from apiflow.agent import TrialLimits, TrialSpec
from apiflow.agent.ids import input_bounds
from apiflow.models import make_model
from apiflow.models.base import GenerateConfig, ModelClient, ModelOutput, ToolCall, Usage
from apiflow.results.record import HARNESS_OUTCOMES, TrialRecord
from apiflow.results.rows import ROW_COLUMNS, record_to_row, rows_to_table
from apiflow.runner import play_trial_sync

from .strategies import arguments, fuzz_settings, json_values, odd_text, sample_bank, tool_names

PUBLISHED_KEYS = [
    "schema_version", "model", "model_api", "task_id", "trial", "verdict", "passed", "failure_reason",
    "tokens", "duration_s", "messages", "verifier", "provenance",
]  # fmt: skip
TASKS = ["sample-w01-sub01", "sample-w01-sub03", "sample-w01-sub06", "sample-w01-chain-1to04"]


@dataclass
class DrawnModel:
    """A ``ModelClient`` playing drawn turns; after them it keeps repeating the last (an endless loop)."""

    turns: list[Any]
    model_api: str = "fuzz/drawn"
    calls: int = field(default=0)

    async def generate(self, messages: list[Any], tools: list[Any], config: GenerateConfig) -> ModelOutput:
        turn = self.turns[min(self.calls, len(self.turns) - 1)]
        self.calls += 1
        return turn


def _card_text(fields: list[str]) -> st.SearchStrategy[str]:
    card = st.fixed_dictionaries({}, optional={f: json_values for f in fields})
    return st.tuples(odd_text, card).map(
        lambda p: f"{p[0]}\n```json\n{json.dumps(p[1], ensure_ascii=False)}\n```"
    )


def _counts() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(0, 5000),
        st.integers(-(10**12), 10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.none(),
        st.booleans(),
        odd_text,
    )


usages = st.one_of(
    st.builds(Usage, _counts(), _counts(), _counts(), _counts(), _counts()),
    st.builds(Usage),
    st.none(),
    json_values,
)
calls_ = st.builds(
    ToolCall,
    st.one_of(st.text(max_size=8), odd_text, json_values, st.just("dup")),
    tool_names,
    arguments,
)
tool_call_lists = st.one_of(
    st.lists(calls_, max_size=4),
    st.tuples(calls_, st.integers(60, 130)).map(lambda p: [p[0]] * p[1]),  # many parallel calls
    st.just(None),
    json_values,
)


def turns(fields: list[str]) -> st.SearchStrategy[ModelOutput]:
    text = st.one_of(
        odd_text, _card_text(fields), json_values, st.just("x" * 300_000), st.just('{"a":' * 5000)
    )
    return st.builds(
        ModelOutput,
        text=text,
        reasoning=st.none() | odd_text | json_values,
        tool_calls=tool_call_lists,
        usage=usages,
        provider_cost_usd=st.none() | st.floats() | json_values,
        retries=st.just(())
        | st.lists(st.dictionaries(odd_text, json_values, max_size=2), max_size=2)
        | json_values,
    )


def _check_record(record: TrialRecord) -> None:
    assert record.apiflow.termination not in HARNESS_OUTCOMES, record.apiflow.harness_error
    text = record.to_json()
    text.encode("utf-8")  # raises on a lone surrogate
    data = json.loads(text)
    assert list(data) == PUBLISHED_KEYS + ["apiflow"] and data["schema_version"] == "1.0"
    again = TrialRecord.model_validate(data)
    assert again.to_json() == text  # reads back to the same bytes
    row = record_to_row(again)
    assert list(row) == list(ROW_COLUMNS)
    rows_to_table([row])
    bounds = input_bounds()
    for hit in record.apiflow.limits_hit:
        assert hit.hits > 0 and bounds[hit.limit] == hit.value
    tokens = record.apiflow.tokens
    assert min(tokens.input, tokens.output, tokens.cache_read, tokens.cache_write, tokens.reasoning) >= 0


@st.composite
def trials(draw: st.DrawFn) -> tuple[str, list[Any]]:
    task_id = draw(st.sampled_from(TASKS))
    fields = list(sample_bank().task(task_id).card_fields)
    return task_id, draw(st.lists(turns(fields), min_size=1, max_size=5))


def _run(task_id: str, model: DrawnModel, limits: TrialLimits) -> TrialRecord:
    bank = sample_bank()
    task = bank.task(task_id)
    return play_trial_sync(
        TrialSpec(
            task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
            run_id="fuzz", limits=limits, model_slug="fuzz-drawn",
        ),
        model,
    )


@fuzz_settings(200)
@given(trials())
def test_drawn_model_output_is_always_a_recorded_model_outcome(trial: tuple[str, list[Any]]) -> None:
    task_id, drawn = trial
    record = _run(task_id, DrawnModel(drawn), TrialLimits(max_messages=40))
    _check_record(record)


@fuzz_settings(50)
@given(trials())
def test_drawn_model_without_message_or_time_limits(trial: tuple[str, list[Any]]) -> None:
    """With the message and time limits off, the tool-call limit and the always-on bounds end every trial."""
    task_id, drawn = trial
    record = _run(
        task_id, DrawnModel(drawn), TrialLimits(max_messages=None, max_tool_calls=400, max_seconds=None)
    )
    _check_record(record)


@dataclass
class Interleaved:
    """The oracle, with drawn turns slipped in at drawn places: trials that pass and fail both."""

    oracle: ModelClient
    inserts: dict[int, Any]
    model_api: str = "fuzz/interleaved"
    turn: int = 0

    async def generate(self, messages: list[Any], tools: list[Any], config: GenerateConfig) -> ModelOutput:
        self.turn += 1
        if self.turn in self.inserts:
            return self.inserts[self.turn]
        return await self.oracle.generate(messages, tools, config)


@st.composite
def interleaved(draw: st.DrawFn) -> tuple[str, dict[int, Any]]:
    task_id = draw(st.sampled_from(TASKS))
    fields = list(sample_bank().task(task_id).card_fields)
    return task_id, draw(st.dictionaries(st.integers(1, 12), turns(fields), max_size=2))


@fuzz_settings(100)
@given(interleaved())
def test_oracle_with_drawn_turns_slipped_in(trial: tuple[str, dict[int, Any]]) -> None:
    task_id, inserts = trial
    task = sample_bank().task(task_id)
    record = _run(
        task_id, Interleaved(make_model("apiflow/oracle", task, 0), inserts), TrialLimits(max_messages=80)
    )
    _check_record(record)
    if not inserts:
        assert record.passed is True  # the plain oracle passes: the check above saw graded-C records too
