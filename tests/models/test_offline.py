"""Offline models: the oracle plays the golden path, blank stays silent, sim profiles differ."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from apiflow.bank.task import GoldenCall, GoldenStep, Task
from apiflow.errors import UsageError
from apiflow.grading.spec import AnswerFieldSpec
from apiflow.models import OFFLINE_PROFILES, make_model, model_slug
from apiflow.models.base import GenerateConfig
from apiflow.models.offline import MISSING_REF, resolve_refs
from apiflow.models.registry import sim_model
from apiflow.models.sim import PROFILES


def task_with(steps: int, kind: str = "solo") -> Task:
    golden = [
        GoldenStep(
            calls=[GoldenCall(name="execute", arguments={"request": {"method": "POST", "url": f"/v1/s{i}"}})],
            decoy=[GoldenCall(name="execute", arguments={"request": {"method": "POST", "url": f"/v0/s{i}"}})],
        )
        for i in range(steps)
    ]
    return Task(
        id="tst-w01-sub01" if kind == "solo" else f"tst-w01-chain-1to{steps:02d}",
        world="w01",
        kind=kind,
        length=1 if kind == "solo" else steps,  # type: ignore[arg-type]
        prompt="p",
        card_fields=["plan_id", "n"],
        predicates=[
            AnswerFieldSpec(field="plan_id", expected="plan-0001", comparator="string"),
            AnswerFieldSpec(field="n", expected=3, comparator="numeric"),
        ],
        golden=golden,
    )


def _all_turns(model: Any) -> list[Any]:
    """Drive a scripted model with fake execute results until it stops calling tools."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    outputs = []
    for n in range(200):
        out = asyncio.run(model.generate(messages, [], GenerateConfig()))
        outputs.append(out)
        if not out.tool_calls:
            return outputs
        for call in out.tool_calls:
            ref = f"request:req-{n:06x}/response:resp-{n:08x}"
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "function": call.name,
                    "content": json.dumps({"response_ref": ref}),
                }
            )
    raise AssertionError("model never stopped")


def test_resolve_refs() -> None:
    value = {"a": ["{{ref:1}}", {"b": "x {{ref:0}}"}], "n": 3}
    assert resolve_refs(value, {0: "R0"}) == {"a": [MISSING_REF, {"b": "x R0"}], "n": 3}


def test_oracle_ends_with_expected_card_and_plausible_tokens() -> None:
    outputs = _all_turns(make_model("apiflow/oracle", task_with(3), seed=1))
    assert len(outputs) == 4
    card = json.loads(outputs[-1].text.split("```json\n")[1].split("\n```")[0])
    assert card == {"plan_id": "plan-0001", "n": 3}
    # The prefix already seen is billed as cache reads; each call adds a little new input.
    assert outputs[0].usage.cache_read == 0 and outputs[0].usage.input > 0
    assert outputs[-1].usage.cache_read > outputs[1].usage.cache_read > 0


def test_token_meter_bills_each_new_message_once_by_its_size() -> None:
    # The meter's sizes are summed in the same pass that reads refs: check them against the
    # plain rule (schema JSON once; each new string content + 8; each assistant turn our previous
    # output; 4 characters a token; what was seen before is a cache read).
    tools = [{"name": "execute", "parameters": {"type": "object"}}]
    model = make_model("apiflow/oracle", task_with(3), seed=1)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "sys" * 7},
        {"role": "user", "content": "u"},
    ]
    seen, cached, last_out = 0, 0, 0
    for n in range(10):
        out = asyncio.run(model.generate(messages, tools, GenerateConfig()))
        chars = len(json.dumps(tools)) if seen == 0 else 0
        for message in messages[seen:]:
            if message["role"] == "assistant":
                chars += last_out
            elif isinstance(message["content"], str):
                chars += len(message["content"]) + 8
        assert (out.usage.input, out.usage.cache_read) == (chars // 4, cached)
        seen, cached = len(messages), cached + chars // 4
        last_out = len(out.text) + sum(len(json.dumps(c.arguments)) + len(c.name) for c in out.tool_calls)
        assert out.usage.output == max(1, last_out // 4)
        if not out.tool_calls:
            return
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "ignored"}]})
        for call in out.tool_calls:
            content: Any = json.dumps({"response_ref": f"request:req-{n:06x}/response:resp-{n:08x}"})
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "function": call.name, "content": content}
            )
        messages.append({"role": "tool", "content": [{"type": "text", "text": "not a string: not billed"}]})
    raise AssertionError("model never stopped")


def test_blank_makes_no_tool_call_and_no_answer() -> None:
    outputs = _all_turns(make_model("apiflow/blank", task_with(3), seed=1))
    assert len(outputs) == 1 and outputs[0].tool_calls == () and outputs[0].text == ""


def _deviations(profile: str, steps: int, seeds: range) -> float:
    """Share of trials whose script differs from the golden one."""
    golden = [c.arguments for s in task_with(steps).golden for c in s.calls]
    differ = 0
    for seed in seeds:
        outputs = _all_turns(sim_model(task_with(steps), seed, profile))
        sent = [c.arguments for o in outputs for c in o.tool_calls]
        differ += (
            sent != golden
            or '"plan_id": "plan-0001"' not in outputs[-1].text
            or '"n": 3' not in outputs[-1].text
        )
    return differ / len(seeds)


def test_sim_is_deterministic_per_seed_and_varies_across_seeds() -> None:
    def script(seed: int) -> list[str]:
        return [repr((o.text, o.tool_calls)) for o in _all_turns(sim_model(task_with(6), seed, "weak"))]

    assert script(3) == script(3)
    assert len({tuple(script(s)) for s in range(12)}) > 3


def test_sim_profiles_differ_and_deviations_compound_with_length() -> None:
    seeds = range(150)
    strong, weak = _deviations("strong", 4, seeds), _deviations("weak", 4, seeds)
    assert weak > strong + 0.3
    assert _deviations("steady", 12, seeds) > _deviations("steady", 2, seeds) + 0.1


def test_profiles_are_ordered_strongest_first() -> None:
    assert OFFLINE_PROFILES == tuple(PROFILES)
    skip = [PROFILES[p].skip_step for p in OFFLINE_PROFILES]
    assert skip == sorted(skip)


@pytest.mark.parametrize(
    "name",
    [
        "apiflow/nope",
        "apiflow/sim:nope",
        "",
        "has space",
        " apiflow/oracle",
        "apiflow/oracle\u2003",
        "a\x85b",
    ],
)
def test_bad_names_are_usage_errors(name: str) -> None:
    with pytest.raises(UsageError):
        make_model(name, task_with(1), seed=0)


def test_other_names_go_to_the_litellm_adapter() -> None:
    model = make_model("openai/gpt-5-mini", task_with(1), seed=0, params={"api_base": "http://127.0.0.1:1"})
    assert model.model_api == "openai/gpt-5-mini"
    assert (
        model_slug("openai/gpt-5-mini") == "gpt-5-mini"
        and model_slug("apiflow/sim:weak") == "apiflow-sim-weak"
    )


def test_script_memo_does_not_keep_tasks_alive() -> None:
    import gc

    from apiflow.models import offline

    task = task_with(3)
    first = offline.golden_turns(task)
    assert offline.golden_turns(task) is first  # derived once per task object
    _all_turns(make_model("apiflow/oracle", task, seed=0))
    before = len(offline._script_memo._items)
    del task, first
    gc.collect()
    # Other tests' tasks may be collected by the same gc pass: at least ours must be gone.
    assert len(offline._script_memo._items) <= before - 1


def test_weak_sim_sometimes_ends_with_an_empty_reply() -> None:
    finals = [_all_turns(sim_model(task_with(2), seed, "weak"))[-1] for seed in range(300)]
    empty = sum(f.text == "" and not f.tool_calls for f in finals)
    assert 0 < empty < 40
