"""The one door every model comes through.

A ``ModelClient`` turns the conversation so far (schema-1.0 message dicts) and
the tool schemas into the next assistant turn. Offline models and the litellm
adapter are ordinary implementations; the agent loop knows nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the model emitted it.

    ``arguments`` is a dict when the provider returned valid JSON, otherwise the raw
    string, so that malformed arguments can go back to the model as a tool error.
    """

    id: str
    name: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call, by priced kind; the kinds are disjoint.

    ``input`` excludes cache reads and writes; ``output`` excludes reasoning tokens.
    ``cache_write_1h`` is not a sixth kind but the part of ``cache_write`` written for an hour
    (Anthropic bills it at another rate): every count of writes keeps meaning all writes.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cache_write_1h: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.reasoning + other.reasoning,
            self.cache_write_1h + other.cache_write_1h,
        )


@dataclass(frozen=True, slots=True)
class ModelOutput:
    """The next assistant turn.

    Attributes:
        text: Visible assistant text ("" when none).
        reasoning: Reasoning as the record keeps it: readable text when the provider exposes
            some, else its opaque form (encrypted content, redacted thinking data). What a provider
            needs replayed (signatures, item ids) is not here: the client that produced the turn
            keeps it (docs/design/046-provider-fidelity.md).
        tool_calls: Calls to run, possibly several in parallel.
        usage: Tokens this call consumed.
        provider_cost_usd: The provider library's own cost figure, kept only as a cross-check.
        retries: Provider retries spent on this call (recorded on the trial).
        served: What the provider said served this call: ``(model, fingerprint, request id)`` as its
            response named them (``system_fingerprint`` or the provider's equivalent; "" when it
            named none). Set by the provider adapter; None for models without a provider.
        tier: The service tier the provider said it served this call at, in the price table's
            names (``standard``, ``flex``, ``priority``, ``batch``; ``provider_fields.served_tier``):
            it may differ from the tier asked for, and the call is priced at it. None when the
            provider named none, or for models without a provider.
    """

    text: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    provider_cost_usd: float | None = None
    retries: tuple[dict[str, Any], ...] = ()
    served: tuple[str, str, str] | None = None
    tier: str | None = None


@dataclass(frozen=True, slots=True)
class GenerateConfig:
    """Generation parameters passed through to the provider."""

    temperature: float = 1.0
    max_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ProviderError(Exception):
    """The provider could not answer after the retry layer gave up.

    This is a harness/provider outcome, never a model failure: the trial is recorded
    as ``provider_error``, excluded from model scores and retried by a later resume.
    """

    def __init__(self, message: str, retries: tuple[dict[str, Any], ...] = ()) -> None:
        super().__init__(message)
        self.retries = retries


class AgentFault(Exception):
    """Code that stands for the agent failed: a plug-in's ``generate`` raised or broke the contract, an
    external agent left before it played or never spoke. The agent's outcome, not the harness's: the
    trial ends there, is graded and counted (``no_answer``), and its record names the cause
    (``apiflow.agent_error``). ``ProviderError`` is kept for faults the harness saw on a provider's
    wire through its own adapter (docs/design/045-secrets-and-unscored.md)."""


class ContextWindowExceeded(Exception):
    """The conversation no longer fits the model's context window (the provider said so).

    The model's own limit, not a fault: the trial ends as ``limit`` with ``apiflow.limit`` =
    ``context_window`` and is scored, as Inspect AI scores a ``model_length`` stop. Retrying or
    resuming would only replay the same overflow.
    """

    def __init__(self, message: str, retries: tuple[dict[str, Any], ...] = ()) -> None:
        super().__init__(message)
        self.retries = retries


@runtime_checkable
class ModelClient(Protocol):
    """A model that can take the next turn of a trial."""

    model_api: str
    """Provider route recorded in the trial (``model_api`` in schema 1.0)."""

    async def generate(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        config: GenerateConfig,
    ) -> ModelOutput:
        """Return the next assistant turn for ``messages``."""
        ...
