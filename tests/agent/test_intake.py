"""Model output is untrusted: each bound and repair, recorded by name, and never a harness error."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest

from apiflow.agent import TrialLimits, TrialSpec, run_loop
from apiflow.agent.ids import FIRST_INPUT_BOUNDS, agent_version, input_bounds
from apiflow.agent.intake import TEXT_CHARS, TRANSCRIPT_CHARS, TURN_TOOL_CALLS, InputLog, TurnIntake
from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.models import make_model
from apiflow.models.base import GenerateConfig, ModelOutput, ToolCall, Usage
from apiflow.models.chat_messages import parse_arguments
from apiflow.results.record import Termination, TrialRecord
from apiflow.runner import play_trial_sync
from apiflow.tools.limits import ARGUMENT_CHARS

from .fakes import FakeToolbox, tiny_task


@pytest.fixture(scope="module")
def bank() -> Bank:
    return load_bank(DEFAULT_BANK)


@dataclass
class Playback:
    """Plays the given turns, then repeats the last one forever."""

    turns: list[Any]
    model_api: str = "test/playback"
    served: int = 0

    async def generate(self, messages: list, tools: list, config: GenerateConfig) -> ModelOutput:
        turn = self.turns[min(self.served, len(self.turns) - 1)]
        self.served += 1
        return turn


def _trial(
    bank: Bank, model: Any, limits: TrialLimits | None = None, task_id: str = "sample-w01-sub01"
) -> TrialRecord:
    task = bank.task(task_id)
    return play_trial_sync(
        TrialSpec(
            task=task, world=bank.world_of(task), seed=3, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
            run_id="r", limits=limits, model_slug="s",
        ),
        model,
    )


def _hits(record: TrialRecord) -> dict[str, int]:
    return {h.limit: h.hits for h in record.apiflow.limits_hit}


def _written(record: TrialRecord) -> dict[str, Any]:
    text = record.to_json()
    text.encode("utf-8")
    data = json.loads(text)
    assert TrialRecord.model_validate(data).to_json() == text
    return data


def test_a_clean_turn_is_passed_through_untouched() -> None:
    log = InputLog()
    raw = ModelOutput("hi", None, (ToolCall("c1", "search", {"query": "é"}),), Usage(1, 2, 3, 4, 5))
    checked = TurnIntake(log).check(raw, TRANSCRIPT_CHARS)
    assert checked.output is raw and checked.runnable == 1 and not log.limits and not log.repairs


def test_an_honest_trial_writes_no_new_keys(bank: Bank) -> None:
    task = bank.task("sample-w01-chain-1to03")
    data = _written(_trial(bank, make_model("apiflow/oracle", task, 1), task_id=task.id))
    assert "limits_hit" not in data["apiflow"] and "input_repairs" not in data["apiflow"]
    assert list(data["apiflow"])[-2:] == ["agent_version", "tool_schema_hash"]


def test_bounds_stay_out_of_agent_version_until_one_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert input_bounds() == FIRST_INPUT_BOUNDS
    assert agent_version(TrialLimits()) == "0.1.0+d08e4770b957"  # the id of every trial before the bounds
    import apiflow.agent.ids as ids

    monkeypatch.setattr(ids, "TOOL_BOUNDS", {**ids.TOOL_BOUNDS, "argument_chars": 1})
    assert agent_version.__wrapped__(TrialLimits()) != "0.1.0+d08e4770b957"


def test_odd_types_everywhere_are_repaired_and_counted(bank: Bank) -> None:
    calls = (
        ToolCall(7, "search", {"query": "x"}),  # type: ignore[arg-type]
        ToolCall("dup", 42, {}),  # type: ignore[arg-type]
        ToolCall("dup", "search", [1, 2]),  # type: ignore[arg-type]
        ToolCall("ok", "x" * 10_000, None),  # type: ignore[arg-type]
        "not a call",
    )
    odd = ModelOutput(
        text=b"bytes",  # type: ignore[arg-type]
        reasoning=["r"],  # type: ignore[arg-type]
        tool_calls=calls,  # type: ignore[arg-type]
        usage=Usage(-5, 10**15, 2.5, True, "x"),  # type: ignore[arg-type]
        provider_cost_usd=float("nan"),
        retries=({"ok": 1}, "bad", {"n": float("inf")}),  # type: ignore[arg-type]
    )
    record = _trial(bank, Playback([odd, ModelOutput("done")]))
    data = _written(record)
    assert record.apiflow.termination is Termination.ANSWERED
    assert record.apiflow.input_repairs == {
        "text_type": 1, "reasoning_type": 1, "tool_call_id": 3, "tool_name": 2, "arguments_type": 1,
        "tool_call_type": 1, "usage": 1, "provider_cost": 1, "retries": 1,
    }  # fmt: skip
    turn = data["messages"][2]
    assert [c["id"] for c in turn["tool_calls"]] == [
        "apiflow-001-0",
        "dup",
        "apiflow-001-2",
        "ok",
        "apiflow-001-4",
    ]
    assert [c["name"] for c in turn["tool_calls"]][1:3] == ["42", "search"]
    assert turn["tool_calls"][2]["arguments"] == "[1, 2]" and turn["tool_calls"][3]["arguments"] == {}
    tokens = record.apiflow.tokens
    assert (tokens.input, tokens.output, tokens.cache_read, tokens.cache_write, tokens.reasoning)[:4] == (
        0, 100_000_000, 2, 0,
    )  # fmt: skip
    assert record.apiflow.provider_cost_usd is None and record.apiflow.retries == [{"ok": 1}]
    errors = [m["error"]["type"] for m in data["messages"] if m["role"] == "tool" and "error" in m]
    assert errors == ["parsing", "parsing", "parsing", "parsing"]  # name 42, [1, 2], a long name, "<str>"


def test_lone_surrogates_never_make_the_record_unwritable(bank: Bank) -> None:
    turn = ModelOutput(
        "answer \ud800",
        "think \udfff",
        (
            ToolCall("i\udc00", "search", {"query\ud801": "\ud802"}),
            ToolCall("j", "search", '{"query": "\\ud803"}'),
        ),
    )
    record = _trial(bank, Playback([turn, ModelOutput("done \ud83d\ude00")]))
    data = _written(record)
    assert record.apiflow.input_repairs == {"unicode": 6}
    assert data["messages"][-1]["content"][0]["text"] == "done \U0001f600"
    assert data["messages"][2]["tool_calls"][0]["id"] == "i\ufffd"


def test_parallel_calls_over_the_bound_are_answered_not_run() -> None:
    n = TURN_TOOL_CALLS + 36
    calls = tuple(ToolCall(f"c{i}", "search", {"query": str(i)}) for i in range(n))
    box = FakeToolbox()
    messages = initial_messages(tiny_task())
    model = Playback([ModelOutput(tool_calls=calls), ModelOutput("done")])
    outcome = asyncio.run(run_loop(model, box, [], messages, limits=TrialLimits(max_messages=None)))
    assert outcome.termination is Termination.ANSWERED
    assert len(box.calls) == TURN_TOOL_CALLS == outcome.tool_calls and outcome.tool_errors == 36
    tool_msgs = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == [f"c{i}" for i in range(n)]  # every call answered
    assert tool_msgs[-1]["error"]["message"].startswith(f"Not run: this turn has more than {TURN_TOOL_CALLS}")
    assert outcome.input.limits == {"parallel_calls": 36}  # one hit per refused call


def test_long_text_is_cut_and_named(bank: Bank) -> None:
    record = _trial(bank, Playback([ModelOutput("y" * (TEXT_CHARS + 10), "z" * (TEXT_CHARS + 1))]))
    text = record.messages[-1]["content"][1]["text"]
    assert len(text) < TEXT_CHARS + 100 and text.endswith("(limit text_chars)]")
    assert _hits(record) == {"text_chars": 2}
    assert [(h.limit, h.value) for h in record.apiflow.limits_hit] == [("text_chars", TEXT_CHARS)]


def test_tool_bounds_reach_the_record(bank: Bank) -> None:
    big = json.dumps({"query": "q" * (ARGUMENT_CHARS + 1)})
    record = _trial(
        bank, Playback([ModelOutput(tool_calls=(ToolCall("a", "search", big),)), ModelOutput("ok")])
    )
    data = _written(record)
    assert _hits(record) == {"argument_chars": 1}
    assert data["apiflow"]["limits_hit"] == [{"limit": "argument_chars", "value": ARGUMENT_CHARS, "hits": 1}]
    recorded = data["messages"][2]["tool_calls"][0]["arguments"]
    assert len(recorded) == 2001 and recorded.endswith("…")  # a preview, not 256 KiB


def test_the_transcript_bound_ends_a_trial_with_every_other_limit_off(bank: Bank) -> None:
    calls = (ToolCall("a", "nope", "x" * (ARGUMENT_CHARS - 10)),)
    off = TrialLimits(max_messages=None, max_tool_calls=None, max_tokens=None, max_seconds=None)
    record = _trial(bank, Playback([ModelOutput(tool_calls=calls)]), limits=off)
    assert (record.apiflow.termination, record.apiflow.limit) == ("limit", "transcript_chars")
    assert _hits(record) == {"transcript_chars": 1} and record.verdict == "I"  # graded: a model outcome
    assert TRANSCRIPT_CHARS < len(record.to_json()) < TRANSCRIPT_CHARS + 2 * ARGUMENT_CHARS


def test_one_turn_bigger_than_the_transcript_bound_is_not_kept_whole() -> None:
    args = "x" * (ARGUMENT_CHARS - 10)
    calls = tuple(ToolCall(f"c{i}", "nope", args) for i in range(TRANSCRIPT_CHARS // ARGUMENT_CHARS + 40))
    messages = initial_messages(tiny_task())
    outcome = asyncio.run(run_loop(Playback([ModelOutput(tool_calls=calls)]), FakeToolbox(), [], messages))
    assert (outcome.termination, outcome.limit) == ("limit", "transcript_chars")
    kept = messages[-1]["tool_calls"]
    assert (
        len(kept) < len(calls) and sum(len(c["arguments"]) for c in kept) <= TRANSCRIPT_CHARS + ARGUMENT_CHARS
    )


def test_a_client_returning_no_model_output_is_still_a_harness_error(bank: Bank) -> None:
    record = _trial(bank, Playback([{"text": "hi"}]))
    assert record.apiflow.termination is Termination.HARNESS_ERROR
    assert record.apiflow.harness_error == "TypeError: model client returned dict, not a ModelOutput"


def test_litellm_arguments_nested_past_the_recursion_limit_stay_raw() -> None:
    assert parse_arguments("[" * 100_000) == "[" * 100_000


def test_card_scan_of_hostile_final_text() -> None:
    """What the grader's card scan makes of text built against it (it stays linear: docs/design/031)."""
    from apiflow.grading.answer import top_level_objects

    deep = '{"a":' * 3000 + "1" + "}" * 3000
    assert top_level_objects(deep + ' then {"card": "}{\\""} {"x": 2}') == [{"card": '}{"'}, {"x": 2}]
    assert top_level_objects("{" * 10_000 + '{"x": 1}') == [{"x": 1}]
    assert top_level_objects('x {"a": 1} { \n "b": {"c": 2}} {} {x} {"d": [ {"e":1}') == [
        {"a": 1}, {"b": {"c": 2}}, {}, {"e": 1},
    ]  # fmt: skip


def test_harness_error_text_is_always_writable() -> None:
    from apiflow.agent.loop import harness_error_text

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert harness_error_text(ValueError("bad \ud800")) == "ValueError: bad \ufffd"
    assert harness_error_text(Unprintable()) == "Unprintable: <message not printable>"


def test_honest_records_are_byte_identical_with_the_bounds_passed_through(bank: Bank) -> None:
    """Oracle and sim trials (sim sends malformed JSON, wrong refs, abstentions) meet no bound:
    their records equal those of the same trials with intake and argument scan turned into
    pass-throughs, wall-time fields aside."""
    from unittest import mock

    from apiflow.agent import intake as intake_module
    from apiflow.agent import trial_seed
    from apiflow.tools import toolbox as toolbox_module
    from apiflow.tools.limits import Scan

    def passthrough(self: Any, raw: ModelOutput, budget: int) -> intake_module.CheckedTurn:
        return intake_module.CheckedTurn(raw, tuple(c.arguments for c in raw.tool_calls), len(raw.tool_calls), 0)

    def records() -> list[str]:
        out = []
        for name in ("apiflow/oracle", "apiflow/sim:erratic", "apiflow/sim:weak"):
            for task in bank.tasks.values():
                model = make_model(name, task, trial_seed(3, task.id, 1))
                record = _trial(bank, model, task_id=task.id)
                data = json.loads(record.to_json())
                data["duration_s"], data["provenance"]["created"] = 0, ""
                out.append(json.dumps(data))
        return out

    bounded = records()
    with (
        mock.patch.object(intake_module.TurnIntake, "check", passthrough),
        mock.patch.object(toolbox_module, "scan", lambda value: Scan(value, 0, 0)),
    ):
        assert records() == bounded
    assert not any('"limits_hit"' in r or '"input_repairs"' in r for r in bounded)
