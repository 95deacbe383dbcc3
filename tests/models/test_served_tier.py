"""Each call is recorded and priced at the service tier its provider says served it, not the one asked for.

Through real litellm against the stand-in: the Responses route echoes ``service_tier`` as OpenAI does
(and serves another tier when ``metadata.standin_served_tier`` says so), the Messages route names
``usage.service_tier``, and the chat route's field is read where litellm keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from apiflow.agent import TrialSpec
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models.base import GenerateConfig, ModelOutput, Usage
from apiflow.models.litellm_client import LiteLLMClient, configure_litellm
from apiflow.models.provider_fields import served_tier
from apiflow.models.registry import make_model
from apiflow.results.prices import Prices, call_cost_usd, calls_cost_usd, cost_usd, load_price_table
from apiflow.results.record import TrialRecord
from apiflow.runner import play_trial_sync
from apiflow.testing import standin_openai
from apiflow.testing.standin_openai import SERVED_TIER_KEY
from apiflow.testing.standin_server import StandinConfig, StandinServer

GPT, CLAUDE = "gpt-5-mini", "claude-sonnet-4-6"
TASK = "sample-w01-sub01"
TABLE = load_price_table("2027-02")


@pytest.fixture(scope="module")
def standin() -> Iterator[StandinServer]:
    configure_litellm()
    server = StandinServer(StandinConfig(plays=((GPT, "apiflow/oracle"), (CLAUDE, "apiflow/oracle"))))
    server.start()
    yield server
    server.stop()


def _play(client: Any, prices: Prices, task_id: str = TASK) -> TrialRecord:
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(task_id)
    spec = TrialSpec(task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                     bank_hash=bank.hash, run_id="r", model_slug="m", prices=prices)  # fmt: skip
    return play_trial_sync(spec, client)


def _gpt(server: StandinServer, api: str = "responses", **params: Any) -> LiteLLMClient:
    return LiteLLMClient(
        f"openai/{GPT}", {"api_base": server.url, "api_key": "sk-local", "api": api, **params}
    )


def _tiers(record: TrialRecord) -> list[str | None]:
    return [entry[3] if len(entry) > 3 else None for entry in record.apiflow.served]


def test_flex_asked_but_default_served_is_priced_at_standard_and_recorded(standin: StandinServer) -> None:
    flex, standard = TABLE.price(GPT, "flex"), TABLE.price(GPT)
    served_flex = _play(_gpt(standin, service_tier="flex"), flex)
    forced = {"metadata": {SERVED_TIER_KEY: "default"}}  # OpenAI served another tier than asked
    served_default = _play(_gpt(standin, service_tier="flex", extra_body=forced), flex)

    assert served_flex.passed and served_default.passed
    calls = served_default.apiflow.model_calls
    assert _tiers(served_flex) == ["flex"] * calls and _tiers(served_default) == ["standard"] * calls
    tokens = served_default.apiflow.tokens
    assert tokens == served_flex.apiflow.tokens and tokens.input > 0  # the same calls, billed apart
    assert served_default.apiflow.cost_usd == pytest.approx(cost_usd(tokens, standard), abs=1e-9)
    assert served_flex.apiflow.cost_usd == pytest.approx(cost_usd(tokens, flex), abs=1e-9)
    assert served_default.apiflow.cost_usd == pytest.approx(2 * served_flex.apiflow.cost_usd)


def test_a_request_without_a_tier_is_served_and_recorded_at_standard(standin: StandinServer) -> None:
    record = _play(_gpt(standin), TABLE.price(GPT))
    assert set(_tiers(record)) == {"standard"}
    assert record.apiflow.cost_usd == pytest.approx(
        cost_usd(record.apiflow.tokens, TABLE.price(GPT)), abs=1e-9
    )


def test_anthropic_names_its_tier_on_the_usage(standin: StandinServer) -> None:
    client = LiteLLMClient(f"anthropic/{CLAUDE}", {"api_base": standin.root, "api_key": "sk-ant-local"})
    record = _play(client, TABLE.price(CLAUDE))
    assert record.passed and set(_tiers(record)) == {"standard"}
    assert record.apiflow.cost_usd == pytest.approx(
        cost_usd(record.apiflow.tokens, TABLE.price(CLAUDE)), abs=1e-9
    )
    assert record.apiflow.cost_usd > 0


def test_the_chat_route_reads_the_tier_litellm_keeps_on_the_response(
    standin: StandinServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    render = standin_openai.render_completion
    answers: dict[str, str | None] = {"tier": "default"}

    def rendered(*args: Any, **kwargs: Any) -> dict[str, Any]:
        reply = render(*args, **kwargs)
        reply.pop("service_tier", None)
        return reply if answers["tier"] is None else {**reply, "service_tier": answers["tier"]}

    monkeypatch.setattr(standin_openai, "render_completion", rendered)
    flex = TABLE.price(GPT, "flex")
    record = _play(_gpt(standin, api="chat", service_tier="flex"), flex)
    assert set(_tiers(record)) == {"standard"}
    assert record.apiflow.cost_usd == pytest.approx(
        cost_usd(record.apiflow.tokens, TABLE.price(GPT)), abs=1e-9
    )

    answers["tier"] = None  # a reply that names no tier: priced at the tier asked for, nothing recorded
    record = _play(_gpt(standin, api="chat", service_tier="flex"), flex)
    assert set(_tiers(record)) == {None} and all(len(entry) == 3 for entry in record.apiflow.served)
    assert record.apiflow.cost_usd == pytest.approx(cost_usd(record.apiflow.tokens, flex), abs=1e-9)


@pytest.mark.parametrize(
    ("response", "tier"),
    [
        ({"service_tier": "default"}, "standard"),
        ({"service_tier": "auto"}, "standard"),
        ({"service_tier": "FLEX"}, "flex"),
        ({"service_tier": "priority"}, "priority"),
        ({"service_tier": "scale"}, "scale"),
        ({"usage": {"service_tier": "batch"}}, "batch"),
        ({"usage": {"service_tier": "standard"}}, "standard"),
        ({"service_tier": ""}, None),
        ({"service_tier": 3}, None),
        ({}, None),
    ],
)
def test_provider_tier_names_map_to_the_price_tables(response: dict[str, Any], tier: str | None) -> None:
    assert served_tier(response) == tier


def test_gemini_traffic_type_is_read_from_the_hidden_fields() -> None:
    class Response:
        _hidden_params = {"provider_specific_fields": {"traffic_type": "ON_DEMAND_PRIORITY"}}

    assert served_tier(Response()) == "priority"


def test_a_tier_the_table_lacks_or_prices_from_no_table_price_as_asked() -> None:
    usage = Usage(input=1_000_000, output=1_000_000)
    flex, standard = TABLE.price(GPT, "flex"), TABLE.price(GPT)
    assert call_cost_usd(usage, flex, "standard") == call_cost_usd(usage, standard)
    assert call_cost_usd(usage, flex, "priority") == call_cost_usd(usage, TABLE.price(GPT, "priority"))
    # OpenAI's scale tier is not in the table
    assert call_cost_usd(usage, flex, "scale") == call_cost_usd(usage, flex)
    assert call_cost_usd(usage, flex, None) == call_cost_usd(usage, flex)
    claude = TABLE.price(CLAUDE)
    assert call_cost_usd(usage, claude, "priority") == call_cost_usd(usage, claude)  # batch-only entry
    declared = Prices(input=1.0, output=1.0, cache_read=0.0, cache_write=0.0, reasoning=0.0)
    assert call_cost_usd(usage, declared, "flex") == 2.0  # a plug-in's own prices know no tiers
    assert TABLE.price("apiflow/oracle").at_tier("flex") == TABLE.price("apiflow/oracle")
    # by position; calls past the tiers given price as asked
    expected = call_cost_usd(usage, standard) + 2 * call_cost_usd(usage, flex)
    assert calls_cost_usd([usage] * 3, flex, ["standard"]) == pytest.approx(expected)


def test_the_stand_in_echoes_openais_tiers() -> None:
    assert standin_openai.served_tier({"service_tier": "flex"}) == "flex"
    assert standin_openai.served_tier({"service_tier": "priority"}) == "priority"
    assert standin_openai.served_tier({"service_tier": "auto"}) == "default"
    assert standin_openai.served_tier({}) == "default"
    forced = {"service_tier": "priority", "metadata": {SERVED_TIER_KEY: "default"}}
    assert standin_openai.served_tier(forced) == "default"


class Claims:
    """A model client claiming a tier (a plug-in could): recorded and priced only when it is a short string."""

    model_api = "plug/claims"

    def __init__(self, tier: Any) -> None:
        self.tier = tier

    async def generate(self, messages: list[Any], tools: list[Any], config: GenerateConfig) -> ModelOutput:
        usage = Usage(input=1_000, output=10)
        return ModelOutput(text="done", usage=usage, served=("m", "", "id"), tier=self.tier)


@pytest.mark.parametrize(("claim", "recorded"), [("flex", "flex"), (7, None), ("x" * 500, None)])
def test_the_loop_records_a_served_tier_only_when_it_is_one(claim: Any, recorded: str | None) -> None:
    record = _play(Claims(claim), TABLE.price(GPT))
    assert _tiers(record) == [recorded]
    tier = TABLE.price(GPT, "flex") if recorded else TABLE.price(GPT)
    assert record.apiflow.cost_usd == call_cost_usd(Usage(input=1_000, output=10), tier)


def test_offline_models_record_no_tier() -> None:
    bank = load_bank(DEFAULT_BANK)
    record = _play(make_model("apiflow/oracle", bank.task(TASK), 0), TABLE.price("apiflow/oracle"))
    assert record.apiflow.served == [] and record.apiflow.cost_usd == 0.0
