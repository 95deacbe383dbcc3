"""OpenAI's Responses API as the published runs called it: ``params.api: responses``, ``store`` off,
encrypted reasoning replayed turn to turn.

Each trial runs ``LiteLLMClient`` -> litellm's ``openai/responses/`` route -> HTTP -> the stand-in's
``/v1/responses``, which mints each reasoning item's encrypted content over the whole item and
refuses one that comes back changed or not at all; the same trial through Chat Completions is the
baseline the route must not change (verdict, trial id, record shape).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from apiflow.agent import TrialSpec
from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.errors import UsageError
from apiflow.models.base import GenerateConfig, ModelOutput
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm, rejected_key
from apiflow.models.provider_fields import provider_route
from apiflow.results.prices import cost_usd, load_price_table
from apiflow.results.record import Termination, TrialRecord
from apiflow.runner import play_trial_sync
from apiflow.testing.standin_server import StandinConfig, StandinServer
from cluster.plan import model_route
from cluster.spec import GridModel, load_grid

ROOT = Path(__file__).resolve().parents[2]
GPT = "gpt-5-mini"
TASK = "sample-w01-chain-1to04"  # a chain: a dozen dependent tool-loop turns
ENCRYPTED = "reasoning.encrypted_content"


@pytest.fixture(scope="module")
def bank() -> Any:
    configure_litellm()
    return load_bank(DEFAULT_BANK)


class Spy:
    """Every request the stand-in answered: ``(wire, body, status, answer)``."""

    def __init__(self, server: StandinServer) -> None:
        self.seen: list[tuple[str, dict[str, Any], int, Any]] = []
        handle = server.provider.ahandle

        async def spy(body: dict[str, Any], auth: str = "", wire: str = "openai") -> Any:
            sent = json.loads(json.dumps(body))
            status, headers, answer = await handle(body, auth, wire)  # type: ignore[arg-type]
            self.seen.append((wire, sent, status, answer))
            return status, headers, answer

        server.provider.ahandle = spy  # type: ignore[method-assign]

    def wire(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        return [(body, answer) for wire, body, _, answer in self.seen if wire == name]


@pytest.fixture
def standin() -> Iterator[tuple[StandinServer, Spy]]:
    # ``reasoning``: the chat wire reasons too, so both routes' records carry reasoning blocks.
    server = StandinServer(StandinConfig(plays=((GPT, "apiflow/oracle"),), reasoning=True))
    spy = Spy(server)
    server.start()
    yield server, spy
    server.stop()


def gpt(server: StandinServer, api: str = "responses", **params: Any) -> LiteLLMClient:
    base = {"api_base": server.url, "api_key": "sk-local", "reasoning_effort": "low", "api": api}
    return LiteLLMClient(f"openai/{GPT}", {**base, **params})


def play(bank: Any, client: LiteLLMClient, task_id: str = TASK) -> TrialRecord:
    task = bank.task(task_id)
    spec = TrialSpec(task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                     bank_hash=bank.hash, run_id="r", model_slug=GPT)  # fmt: skip
    return play_trial_sync(spec, client)


def without_reasoning(record: TrialRecord) -> list[dict[str, Any]]:
    """The record's messages with each reasoning block's text blanked (its form is the provider's)."""
    blank = json.loads(json.dumps(record.messages))
    for message in blank:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block["type"] == "reasoning":
                block["reasoning"] = ""
    return blank


# -- the route is a transport setting --------------------------------------------------------------


def test_the_responses_route_plays_the_chat_routes_trial(
    bank: Any, standin: tuple[StandinServer, Spy]
) -> None:
    server, spy = standin
    chat = play(bank, gpt(server, api="chat"))
    responses = play(bank, gpt(server))
    summarised = play(bank, gpt(server, reasoning_effort={"effort": "low", "summary": "auto"}))
    assert server.provider.stats.rejected == 0
    assert chat.apiflow.termination == responses.apiflow.termination == Termination.ANSWERED
    assert chat.verdict == responses.verdict == summarised.verdict == "C"
    assert chat.apiflow.model_calls == responses.apiflow.model_calls >= 10
    # The trial id and model_api are the model's, whichever API serves it.
    assert chat.model_api == responses.model_api == f"openai/{GPT}"
    assert chat.apiflow.trial_id == responses.apiflow.trial_id == summarised.apiflow.trial_id
    # The record's shape is the chat route's: the same keys, the same messages. Only the reasoning's
    # form is the provider's: the opaque encrypted item as published, or its summary when asked for.
    assert chat.model_dump().keys() == responses.model_dump().keys()
    assert chat.apiflow.model_dump().keys() == responses.apiflow.model_dump().keys()
    assert without_reasoning(chat) == without_reasoning(responses)
    assert chat.messages == summarised.messages
    reasoning = [b["reasoning"] for m in responses.messages if isinstance(m["content"], list)
                 for b in m["content"] if b["type"] == "reasoning"]  # fmt: skip
    assert len(reasoning) == responses.apiflow.model_calls and all(r.startswith("gAAAAA") for r in reasoning)
    # What went on the wire: Chat Completions, then the Responses API with store off and the
    # encrypted reasoning asked for; temperature 1 is the Responses API's default and is not sent.
    calls = chat.apiflow.model_calls
    assert len(spy.wire("openai")) == calls and len(spy.wire("responses")) == 2 * calls
    for body, _ in spy.wire("responses"):
        assert body["store"] is False and body["include"] == [ENCRYPTED] and "temperature" not in body


def test_reasoning_items_go_back_exactly_as_received(bank: Any, standin: tuple[StandinServer, Spy]) -> None:
    server, spy = standin
    record = play(bank, gpt(server))
    assert record.passed and server.provider.stats.rejected == 0
    exchanges = spy.wire("responses")
    issued: list[dict[str, Any]] = []
    for body, answer in exchanges:
        sent = [item for item in body["input"] if item.get("type") == "reasoning"]
        assert sent == issued  # every earlier turn's item, each field as the API minted it
        issued += [item for item in answer["output"] if item["type"] == "reasoning"]
    assert len(issued) == record.apiflow.model_calls and all(item["encrypted_content"] for item in issued)
    # Each turn goes back item for item in the order the API returned it (litellm's checksummed replay).
    body, _ = exchanges[-1]
    turns = [item["type"] for item in body["input"] if item.get("type") in ("reasoning", "function_call")]
    returned = [item["type"] for _, answer in exchanges[:-1] for item in answer["output"]]
    assert turns == returned


class Tampering(LiteLLMClient):
    """Changes the first turn's held reasoning state once, before the call that replays it."""

    def __init__(self, client: LiteLLMClient, tamper: Callable[[dict[str, Any]], None]) -> None:
        super().__init__(client.model_api, {**client.params, "api": "responses"})
        self.tamper, self.tampered = tamper, False

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        if self.turns and self.turns[0] is not None and not self.tampered:
            self.tamper(self.turns[0].fields)
            self.tampered = True
        return await super().generate(messages, tools, config)


def _item(fields: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = fields["reasoning_items"][0]
    return item


def _drop(fields: dict[str, Any]) -> None:
    for name in ("reasoning_items", "thinking_blocks", "reasoning_content", "provider_specific_fields"):
        fields.pop(name, None)


@pytest.mark.parametrize(
    ("tamper", "says"),
    [
        (lambda f: _item(f).update(encrypted_content=_item(f)["encrypted_content"][:-4] + "AAAA"),
         "could not be verified"),
        (lambda f: _item(f).update(summary=[{"type": "summary_text", "text": "edited"}]), "could not be verified"),
        (lambda f: _item(f).update(id="rs_other"), "could not be verified"),
        (_drop, "without its required 'reasoning' item"),
    ],
    ids=["encrypted-content", "summary", "id", "dropped"],
)  # fmt: skip
def test_a_changed_or_dropped_reasoning_item_gets_the_live_apis_400(
    bank: Any, standin: tuple[StandinServer, Spy], tamper: Callable[[dict[str, Any]], None], says: str
) -> None:
    server, _ = standin
    record = play(bank, Tampering(gpt(server), tamper))
    assert record.apiflow.termination == Termination.PROVIDER_ERROR and record.apiflow.model_calls == 1
    assert says in (record.apiflow.harness_error or "")
    assert server.provider.stats.rejected == 1


# -- the wire, as OpenAI documents it --------------------------------------------------------------


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _opening(bank: Any, **extra: Any) -> dict[str, Any]:
    system, user = initial_messages(bank.task("sample-w01-sub01"))
    return {"model": GPT, "instructions": system["content"], "reasoning": {"effort": "low"},
            "input": [{"type": "message", "role": "user", "content": user["content"]}], **extra}  # fmt: skip


def _next(first: dict[str, Any], answer: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The follow-up request: the reply's items as the client sends them back, and a tool result."""
    back = [{k: v for k, v in item.items() if k not in ("status",)} for item in answer["output"]]
    results = [{"type": "function_call_output", "call_id": item["call_id"], "output": "[]"}
               for item in answer["output"] if item["type"] == "function_call"]  # fmt: skip
    return {**first, "input": [*first["input"], *back, *results], **extra}


def test_encrypted_content_and_summary_come_only_when_asked(
    bank: Any, standin: tuple[StandinServer, Spy]
) -> None:
    server, _ = standin
    status, plain = post(f"{server.url}/responses", _opening(bank))
    assert status == 200 and plain["store"] is True
    reasoning = plain["output"][0]
    assert (
        reasoning["type"] == "reasoning"
        and reasoning["summary"] == []
        and "encrypted_content" not in reasoning
    )
    asked = _opening(bank, include=[ENCRYPTED], store=False, reasoning={"effort": "low", "summary": "auto"})
    status, full = post(f"{server.url}/responses", asked)
    item = full["output"][0]
    assert status == 200 and item["encrypted_content"].startswith("gAAAAA") and item["summary"][0]["text"]
    usage = full["usage"]
    assert (
        usage["output_tokens_details"]["reasoning_tokens"] > 0
        and "cached_tokens" in usage["input_tokens_details"]
    )


def test_an_item_sent_back_by_id_is_found_only_when_stored(
    bank: Any, standin: tuple[StandinServer, Spy]
) -> None:
    server, _ = standin
    stored = _opening(bank)  # store on, the API's default: the item is kept and found by its id
    _, answer = post(f"{server.url}/responses", stored)
    assert post(f"{server.url}/responses", _next(stored, answer))[0] == 200
    unstored = _opening(bank, store=False)  # store off without the encrypted content: nothing to find
    _, answer = post(f"{server.url}/responses", unstored)
    status, body = post(f"{server.url}/responses", _next(unstored, answer))
    assert status == 404 and body["error"]["type"] == "invalid_request_error"
    assert "Items are not persisted when `store` is set to false" in body["error"]["message"]
    status, body = post(f"{server.url}/responses", {**stored, "previous_response_id": answer["id"]})
    assert status == 404 and "Previous response with id" in body["error"]["message"]


# -- usage kinds, priced ---------------------------------------------------------------------------


def test_usage_kinds_are_read_and_priced(bank: Any, standin: tuple[StandinServer, Spy]) -> None:
    server, spy = standin
    record = play(bank, gpt(server))
    assert spy.wire("responses") and not spy.wire("openai")  # usage in the Responses API's shape
    tokens, billed = record.apiflow.tokens, server.provider.stats
    assert (tokens.input, tokens.output, tokens.cache_read, tokens.cache_write, tokens.reasoning) == (
        billed.billed_input, billed.billed_output, billed.billed_cache_read, 0, billed.billed_reasoning,
    )  # fmt: skip
    assert tokens.cache_read > 0 and tokens.reasoning > 0 and record.tokens.cache == tokens.cache_read
    grid = load_grid(ROOT / "configs/grids/leaderboard.yaml")
    prices = load_price_table(grid.price_table).price(f"openai/{GPT}")
    by_hand = (tokens.input * prices.input + tokens.output * prices.output
               + tokens.cache_read * prices.cache_read + tokens.reasoning * prices.reasoning) / 1_000_000  # fmt: skip
    assert cost_usd(tokens, prices) == pytest.approx(by_hand, abs=1e-9) and by_hand > 0


# -- choosing the route ----------------------------------------------------------------------------


def test_the_api_param_picks_the_route_and_leaves_the_model_id() -> None:
    route, sent = provider_route(f"openai/{GPT}", {"api": "responses", "api_base": "x"})
    assert route == f"openai/responses/{GPT}" and sent == {
        "api_base": "x",
        "store": False,
        "include": [ENCRYPTED],
    }
    assert provider_route(f"openai/{GPT}", {"api": "chat", "timeout": 5}) == (f"openai/{GPT}", {"timeout": 5})
    explicit = provider_route(f"openai/responses/{GPT}", {"store": True, "include": ["x"]})
    assert explicit == (f"openai/responses/{GPT}", {"store": True, "include": ["x", ENCRYPTED]})
    with pytest.raises(UsageError, match="params.api"):
        provider_route(f"openai/{GPT}", {"api": "realtime"})
    with pytest.raises(UsageError, match="openai/"):
        provider_route("anthropic/claude-sonnet-4-6", {"api": "responses"})
    client = LiteLLMClient(f"openai/{GPT}", {"api": "responses"})
    assert client.model_api == f"openai/{GPT}" and client.route == f"openai/responses/{GPT}"


def test_the_leaderboards_openai_models_take_the_responses_route_with_their_ids() -> None:
    grid = load_grid(ROOT / "configs/grids/leaderboard.yaml")
    openai = [m for m in grid.models if m.model.startswith("openai/")]
    assert openai and all(
        m.params.get("api") == "responses" and m.params.get("store") is False for m in openai
    )
    for model in openai:  # the trial id's model route is the model's, not the API's
        bare = GridModel(model=model.model, max_tokens=model.max_tokens, extra=model.extra)
        assert model_route(model) == model_route(bare)


def test_the_key_check_pings_the_route_the_trials_take(bank: Any, standin: tuple[StandinServer, Spy]) -> None:
    server, spy = standin
    import asyncio

    params = {"api": "responses", "api_base": server.url, "api_key": "sk-local"}
    assert asyncio.run(rejected_key(f"openai/{GPT}", params)) is None
    assert [wire for wire, *_ in spy.seen] == ["responses"]
