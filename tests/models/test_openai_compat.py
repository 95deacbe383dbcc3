"""OpenAI-compatible servers: what llama-cpp-python's server refused, and why our request no longer has it.

bench/bench_realmodel.py found it: litellm drops an assistant turn's ``content: None`` key, and
llama-cpp-python's ``chatml-function-calling`` template (StrictUndefined) then fails the request with
HTTP 500 "'dict object' has no attribute 'content'". The stand-in's ``require_content`` plays that
server; the trials here run ``LiteLLMClient`` -> litellm's ``openai/`` route -> HTTP -> the stand-in.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from apiflow.agent import run_trial_sync
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import litellm_client
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm, empty_text_for, to_openai_messages
from apiflow.models.standin_server import StandinConfig, StandinServer
from apiflow.results.record import Termination, TrialRecord

TASK = "sample-w01-chain-1to04"  # a dozen tool-loop turns, each an assistant turn without text


@pytest.fixture(scope="module")
def bank() -> Any:
    configure_litellm()
    return load_bank(DEFAULT_BANK)


@pytest.fixture
def llama_like() -> Iterator[StandinServer]:
    server = StandinServer(StandinConfig(plays=(("smollm2", "apiflow/oracle"),), require_content=True))
    server.start()
    yield server
    server.stop()


def play(bank: Any, server: StandinServer) -> TrialRecord:
    client = LiteLLMClient("openai/smollm2", {"api_base": server.url, "api_key": "sk-local"})
    task = bank.task(TASK)
    return run_trial_sync(task, bank.world_of(task), client, seed=0, epoch=1, bank_name=bank.name,
                          bank_hash=bank.hash, run_id="r", model_slug="standin")  # fmt: skip


def test_a_tool_loop_passes_on_a_server_that_reads_every_content(
    bank: Any, llama_like: StandinServer
) -> None:
    record = play(bank, llama_like)
    assert record.apiflow.termination == Termination.ANSWERED and record.passed
    assert record.apiflow.model_calls >= 10 and llama_like.provider.stats.server_errors == 0


def test_without_empty_text_the_server_fails_as_llama_cpp_did(
    bank: Any, llama_like: StandinServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(litellm_client, "empty_text_for", lambda model: None)  # the old conversion
    record = play(bank, llama_like)
    assert record.apiflow.termination == Termination.PROVIDER_ERROR and record.apiflow.model_calls == 1
    assert "'dict object' has no attribute 'content'" in (record.apiflow.harness_error or "")
    assert llama_like.provider.stats.server_errors == 1


def test_only_openai_wire_routes_send_empty_text() -> None:
    configure_litellm()
    assert empty_text_for("openai/smollm2") == "" == empty_text_for("openai/responses/gpt-5-mini")
    assert empty_text_for("hosted_vllm/qwen") == ""
    # litellm turns "" into an empty text part on Gemini and drops None itself for Anthropic.
    assert (
        empty_text_for("anthropic/claude-sonnet-4-6") is None
        and empty_text_for("gemini/gemini-2.5-flash") is None
    )
    turn = [
        {"role": "assistant", "content": [], "tool_calls": [{"id": "c", "name": "read", "arguments": {}}]}
    ]
    assert to_openai_messages(turn, (), "")[0]["content"] == ""
    assert to_openai_messages(turn)[0]["content"] is None
