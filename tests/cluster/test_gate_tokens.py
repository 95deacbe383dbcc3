"""What the cluster-wide token gate charges a call: what the provider's token limit counts."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from apiflow.models.caching import limit_counts_cache_reads
from cluster.ratelimit import ActorCallGate


class _Method:
    def __init__(self, log: list[tuple[float, float]]) -> None:
        self.log = log

    async def remote(self, estimated: float, actual: float) -> None:
        self.log.append((estimated, actual))


class _Gate:
    """The gate actor's ``correct`` as an awaitable, like ``actor.correct.remote``."""

    def __init__(self) -> None:
        self.log: list[tuple[float, float]] = []
        self.correct = _Method(self.log)


def _response(**usage: Any) -> Any:
    return SimpleNamespace(usage=SimpleNamespace(**usage))


# A Claude call of a long trial with rolling cache marks: most of the prompt is read from the cache.
CLAUDE_CALL = {"prompt_tokens": 40_000, "completion_tokens": 300, "total_tokens": 40_300,
               "cache_read_input_tokens": 38_000, "cache_creation_input_tokens": 1_500}  # fmt: skip


@pytest.mark.parametrize(
    ("model", "charged"),
    [
        ("anthropic/claude-sonnet-4-6", 40_300 - 38_000),  # Anthropic's limits leave cache reads out
        ("bedrock/us.anthropic.claude-opus-4-6-v1:0", 40_300 - 38_000),
        ("openai/gpt-5-mini", 40_300),  # OpenAI counts cached input against TPM
    ],
)
def test_the_gate_charges_what_the_providers_limit_counts(model: str, charged: int) -> None:
    gate = _Gate()
    call_gate = ActorCallGate(gate, counts_cache_reads=limit_counts_cache_reads(model))
    asyncio.run(call_gate.after_attempt(_response(**CLAUDE_CALL)))
    assert gate.log == [(2_000.0, float(charged))]
    assert call_gate.estimate == charged  # the next call is admitted on what this one counted


def test_a_response_without_usage_corrects_nothing() -> None:
    gate = _Gate()
    asyncio.run(ActorCallGate(gate, counts_cache_reads=True).after_attempt(SimpleNamespace(usage=None)))
    assert gate.log == []
