"""Retry-After reaches the retry layer on every route the shipped grids use, read from litellm's own
exception types as each route raises them (the stand-in answers 429 with Retry-After over real HTTP)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models.chat_messages import to_openai_messages
from apiflow.models.litellm_client import _litellm, configure_litellm
from apiflow.models.retry import retry_after_s, status_of
from apiflow.testing.standin_server import StandinConfig, StandinServer

ASKED_S = 7.25
MODELS = (("claude-sonnet-4-6", "apiflow/oracle"), ("gpt-5-mini", "apiflow/oracle"), ("kimi-k2p6", "apiflow/oracle"))


@pytest.fixture(scope="module")
def limited() -> Iterator[StandinServer]:
    configure_litellm()
    server = StandinServer(StandinConfig(plays=MODELS, p_429=1.0, retry_after_s=ASKED_S))
    server.start()
    yield server
    server.stop()


def _routes(server: StandinServer) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("anthropic/claude-sonnet-4-6", {"api_base": server.root, "api_key": "sk-ant-local"}),
        ("openai/gpt-5-mini", {"api_base": server.url, "api_key": "sk-local"}),
        ("openai/responses/gpt-5-mini", {"api_base": server.url, "api_key": "sk-local"}),
        ("fireworks_ai/kimi-k2p6", {"api_base": server.url, "api_key": "fw-local"}),
    ]


@pytest.mark.parametrize("index", range(4))
def test_retry_after_is_read_from_each_routes_own_exception(limited: StandinServer, index: int) -> None:
    model, params = _routes(limited)[index]
    task = load_bank(DEFAULT_BANK).task("sample-w01-sub01")
    messages = to_openai_messages(initial_messages(task))
    litellm = _litellm()

    async def call() -> BaseException:
        try:
            await litellm.acompletion(model=model, messages=messages, max_retries=0, num_retries=0, **params)
        except Exception as exc:  # noqa: BLE001 - the route's own exception type is what is under test
            return exc
        raise AssertionError("the stand-in answered 429 to every request")

    exc = asyncio.run(call())
    assert status_of(exc) == 429, (type(exc), exc)
    assert retry_after_s(exc) == pytest.approx(ASKED_S, abs=0.002), type(exc)
