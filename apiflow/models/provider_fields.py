"""What a provider's response carries beyond text and tool calls, read the same for every provider.

Two tables the litellm adapter (``apiflow.models.litellm_client``) works from, kept apart from it
because they are data about providers, not adapter logic, and import no litellm: the per-turn
reasoning state each provider needs replayed in a tool loop (``REPLAY_FIELDS``, ``ReplayState``;
docs/design/046-provider-fidelity.md), where each provider reports each priced token kind
(``USAGE_SOURCES``, ``usage_from_response``), the tier a provider says it served a call at
(``served_tier``), the reasoning text a record keeps, and the route a model's params choose
(``provider_route``: OpenAI's Responses API as the published runs called it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apiflow.errors import UsageError
from apiflow.models.base import Usage
from apiflow.results.prices import STANDARD

REPLAY_FIELDS = ("thinking_blocks", "reasoning_items", "reasoning_content")
"""Assistant-message fields litellm returns that the provider needs back with the turn: Anthropic's
signed thinking blocks, the Responses API's reasoning items (encrypted content), and the
``reasoning_content`` open-weight reasoning models (DeepSeek, Kimi, ...) refuse a tool loop without."""

BRIDGE_FIELDS = ("openai_responses_replay", "phase")
"""Keys of a message's ``provider_specific_fields`` that litellm's Responses bridge reads back: the
order and checksum of the turn's output items (so the turn goes back item for item as received) and
the message ``phase``. Other keys stay out: the chat routes would pass them to the provider."""


@dataclass(frozen=True, slots=True)
class ReplayState:
    """What one assistant turn must carry back to its provider beyond its text and tool calls.

    Attributes:
        fields: The turn's ``REPLAY_FIELDS`` as litellm returned them (absent ones left out).
        call_fields: Each tool call's ``provider_specific_fields`` (Gemini thought signatures), by
            position; None where a call had none.
        arguments: Each tool call's arguments as the provider sent them, by position, so a turn
            with state goes back in the provider's own bytes (litellm's Responses bridge replays a
            turn item for item only when its checksum over them matches). Not state by itself.
    """

    fields: dict[str, Any]
    call_fields: tuple[dict[str, Any] | None, ...] = ()
    arguments: tuple[str | None, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.fields and not any(self.call_fields)


def replay_state(message: Any) -> ReplayState:
    fields = {name: value for name in REPLAY_FIELDS if (value := _plain(get_field(message, name)))}
    extra = _plain(get_field(message, "provider_specific_fields"))
    bridged = {k: v for k, v in extra.items() if k in BRIDGE_FIELDS and v} if isinstance(extra, dict) else {}
    if bridged:
        fields["provider_specific_fields"] = bridged
    tool_calls = get_field(message, "tool_calls") or ()
    calls = tuple(_plain(get_field(call, "provider_specific_fields")) or None for call in tool_calls)
    raw = (get_field(get_field(call, "function"), "arguments") for call in tool_calls)
    return ReplayState(fields, calls, tuple(a if isinstance(a, str) else None for a in raw))


def _plain(value: Any) -> Any:
    """litellm's pydantic/typed-dict values as plain JSON data, so a replayed turn is sent as received."""
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def get_field(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _tokens(value: Any) -> int:
    """A token count as the provider sent it; what is not a finite number counts 0 (the loop's
    intake bounds the rest, docs/design/031) rather than raising out of ``generate``."""
    try:
        return int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0


USAGE_SOURCES: dict[str, tuple[tuple[str | None, str], ...]] = {
    "cache_read": (
        # OpenAI and Fireworks report it here, and litellm maps Anthropic's and DeepSeek's here too.
        ("prompt_tokens_details", "cached_tokens"),
        (None, "cache_read_input_tokens"),  # Anthropic (litellm copies it to the top level)
        (None, "prompt_cache_hit_tokens"),  # DeepSeek's own field, if litellm did not map it
        (None, "cached_tokens"),  # Moonshot / Kimi put it at the top level
    ),
    "cache_write": (
        (None, "cache_creation_input_tokens"),  # Anthropic
        ("prompt_tokens_details", "cache_creation_tokens"),  # litellm's name for the same
        ("prompt_tokens_details", "cache_write_tokens"),  # OpenRouter
    ),
    "reasoning": (
        # OpenAI, DeepSeek, Gemini; for Anthropic litellm fills it (its own estimate from the thinking).
        ("completion_tokens_details", "reasoning_tokens"),
        (None, "reasoning_tokens"),
    ),
}
"""Where each provider reports each priced kind, first found wins (``(details object, field)``).

Every source counts a subset of litellm's totals: cache reads and writes are inside
``prompt_tokens`` and reasoning inside ``completion_tokens``, which is why ``usage_from_response``
subtracts them to make the kinds disjoint."""


WRITE_1H_SOURCE = ("prompt_tokens_details", "cache_creation_token_details", "ephemeral_1h_input_tokens")
"""Where litellm puts the one-hour part of the cache writes (Anthropic's ``usage.cache_creation``
split); a part of ``cache_write``, so it is read apart rather than as a ``USAGE_SOURCES`` kind."""


def _first_count(usage: Any, kind: str) -> int:
    for details, name in USAGE_SOURCES[kind]:
        value = get_field(get_field(usage, details) if details else usage, name)
        if value:
            return _tokens(value)
    return 0


def usage_from_response(usage: Any) -> Usage:
    """litellm usage -> our ``Usage`` by priced kind (``USAGE_SOURCES`` says where each is read).

    ``input`` excludes cache reads and writes (litellm's ``prompt_tokens`` includes them);
    the kinds are disjoint, as the price table prices them: ``output`` is the visible completion,
    ``reasoning`` the completion tokens spent on reasoning (litellm counts both in ``completion_tokens``).
    ``cache_write`` stays every write; ``cache_write_1h`` is its one-hour part (``WRITE_1H_SOURCE``).
    """
    if usage is None:
        return Usage()
    prompt = _tokens(get_field(usage, "prompt_tokens"))
    completion = _tokens(get_field(usage, "completion_tokens"))
    cache_read = _first_count(usage, "cache_read")
    cache_write = _first_count(usage, "cache_write")
    reasoning = _first_count(usage, "reasoning")
    hour: Any = usage
    for name in WRITE_1H_SOURCE:
        hour = get_field(hour, name)
    return Usage(
        input=max(0, prompt - cache_read - cache_write),
        output=max(0, completion - reasoning),
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning,
        cache_write_1h=min(_tokens(hour), cache_write),  # a part of the writes, never more
    )


def reasoning_text(message: Any) -> str | None:
    """The reasoning the record keeps for one turn, as the published records do.

    Readable reasoning when there is some (``reasoning_content``, which litellm also fills from
    Anthropic thinking blocks and Responses summaries); otherwise the opaque form the provider sent
    (a redacted thinking block's data, a reasoning item's encrypted content), like the published
    ``"gAAAAA…"`` reasoning blocks (REFERENCE §1).
    """
    readable = get_field(message, "reasoning_content")
    if isinstance(readable, str) and readable:
        return readable
    opaque = [
        str(data)
        for block in (get_field(message, "thinking_blocks") or ())
        if (data := get_field(block, "data") or get_field(block, "thinking"))
    ]
    opaque += [
        str(data)
        for item in (get_field(message, "reasoning_items") or ())
        if (data := get_field(item, "encrypted_content"))
    ]
    return "\n".join(opaque) or None


def request_id(hidden: dict[str, Any], response: Any) -> str:
    """The provider's own id for the call: its ``request-id``/``x-request-id`` response header where
    litellm kept it (on some routes litellm makes up the response id), else the response's id."""
    headers = hidden.get("additional_headers") or {}
    for name, value in headers.items() if isinstance(headers, dict) else ():
        if str(name).lower().endswith(("request-id", "request_id")) and value:
            return str(value)
    return str(get_field(response, "id") or "")


TIER_NAMES: dict[str, str] = {
    "default": STANDARD,  # OpenAI's name for its standard tier
    "auto": STANDARD,  # what OpenAI's request asks for; a reply naming it means the project default
    "standard_only": STANDARD,  # Anthropic's request name
    "on_demand": STANDARD,  # Gemini's trafficType
    "on_demand_priority": "priority",
    "on_demand_flex": "flex",
}
"""Providers' names for a served tier -> the price table's (``apiflow.results.prices``). Names the same
on both sides (``flex``, ``priority``, ``batch``, ``standard``) are not listed; an unknown one is kept
as the provider wrote it, and prices as the tier asked for (``Prices.at_tier``)."""

TIER_CHARS = 40
"""Characters kept of a tier name (a provider's enum; anything longer is not one)."""


def served_tier(response: Any) -> str | None:
    """The tier the provider says served this call, in the price table's names; None when it named none.

    litellm keeps it where the provider put it: ``service_tier`` on the response (OpenAI Chat
    Completions and the Responses route: ``default``, ``flex``, ``priority``, ``scale``), on the usage
    (Anthropic: ``standard``, ``priority``, ``batch``), or Gemini's ``trafficType`` in the hidden
    ``provider_specific_fields`` (read in litellm's source, not on a wire: the stand-in has no Gemini).
    """
    raw = get_field(response, "service_tier") or get_field(get_field(response, "usage"), "service_tier")
    if not raw:
        hidden = getattr(response, "_hidden_params", None)
        extra = hidden.get("provider_specific_fields") if isinstance(hidden, dict) else None
        raw = extra.get("traffic_type") if isinstance(extra, dict) else None
    if not isinstance(raw, str) or not raw.strip():
        return None
    name = raw.strip().lower()[:TIER_CHARS]
    return TIER_NAMES.get(name, name)


RESPONSES_ROUTE = "openai/responses/"
"""litellm's route to OpenAI's Responses API behind its chat-completions interface."""

APIS = ("chat", "responses")

RESPONSES_DEFAULTS: dict[str, Any] = {"store": False}
"""What the Responses route sends unless the model's params say otherwise. ``store`` off, as the
published runs had it: OpenAI keeps nothing between calls, so every turn's reasoning must come back
as its encrypted item (``include`` below asks for it) and a resumed trial needs no server state."""

ENCRYPTED_REASONING = "reasoning.encrypted_content"


def provider_route(model: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(litellm route, call params)`` for a model id and its grid params.

    ``params["api"]`` picks OpenAI's API for an ``openai/`` model: ``chat`` (Chat Completions, the
    default) or ``responses`` (the Responses API, ``openai/responses/<name>``). It is a transport
    setting like ``api_base``: the model id, and so the trial id and the record's ``model_api``, stay
    as written. The Responses route always asks for the encrypted reasoning items, which the adapter
    replays turn to turn.

    Raises:
        UsageError: An unknown ``api``, or ``responses`` for a model that is not on the ``openai/`` route.
    """
    sent = dict(params)
    api = sent.pop("api", "chat")
    if api not in APIS:
        raise UsageError(f"params.api must be one of {', '.join(APIS)}, got {api!r}")
    route = model
    if api == "responses" and not model.startswith(RESPONSES_ROUTE):
        if not model.startswith("openai/"):
            raise UsageError(f"params.api responses needs an openai/ model, got {model!r}")
        route = RESPONSES_ROUTE + model.removeprefix("openai/")
    if route.startswith(RESPONSES_ROUTE):
        sent = {**RESPONSES_DEFAULTS, **sent}
        include = list(sent.get("include") or ())
        sent["include"] = include if ENCRYPTED_REASONING in include else [*include, ENCRYPTED_REASONING]
    return route, sent
