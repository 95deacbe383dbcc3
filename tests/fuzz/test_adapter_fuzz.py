"""Fuzzing the litellm adapter's reading of a provider response: what the model sent, as the
provider relays it, becomes a ``ModelOutput`` (possibly odd, for the intake to repair), never an
exception out of ``generate`` (which the loop would record as a harness error)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from apiflow.agent.intake import TRANSCRIPT_CHARS, InputLog, TurnIntake
from apiflow.models.base import ModelOutput
from apiflow.models.chat_messages import output_from_response

from .strategies import HOSTILE_TEXT, fuzz_settings, json_values, odd_text

texts = st.none() | odd_text | json_values | st.sampled_from(HOSTILE_TEXT)
numbers = st.none() | st.integers(-(10**6), 10**12) | st.floats() | odd_text


def _ns(**fields: Any) -> SimpleNamespace:
    return SimpleNamespace(**fields)


tool_calls = st.lists(
    st.builds(
        lambda i, n, a: _ns(id=i, function=_ns(name=n, arguments=a)),
        texts,
        texts,
        texts | json_values.map(json.dumps),
    ),
    max_size=4,
)
usage = st.none() | st.builds(
    lambda p, c, cached, r: {
        "prompt_tokens": p,
        "completion_tokens": c,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": r},
    },
    numbers, numbers, numbers, numbers,
)  # fmt: skip
responses = st.builds(
    lambda content, reasoning, calls, u, cost: _ns(
        choices=[_ns(message={"content": content, "reasoning_content": reasoning, "tool_calls": calls})],
        usage=u,
        _hidden_params={"response_cost": cost},
    ),
    texts, texts, st.none() | tool_calls, usage, numbers,
)  # fmt: skip


@fuzz_settings(150)
@given(responses)
def test_any_provider_response_reads_into_a_model_output(response: Any) -> None:
    output = output_from_response(response)
    assert isinstance(output, ModelOutput)
    TurnIntake(InputLog()).check(output, TRANSCRIPT_CHARS)
