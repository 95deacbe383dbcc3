"""The litellm adapter: THE ONLY module that imports litellm (lazily, inside functions).

It sends schema-1.0 conversations through litellm (``chat_messages`` converts them to the OpenAI chat
format and the response back), passes the tool schemas, and reports usage by priced kind and the tier
that served each call. It makes exactly one provider attempt (``num_retries=0``): retries belong to
the grid runner's single tenacity layer, which plugs in through ``RetryHook``. A provider fault that
outlives the hook becomes ``ProviderError`` (a harness outcome, never a model failure), its text
redacted at ``faults``. Nothing is configured at import: the runner calls ``configure_litellm()``.
Modules beside it that need litellm itself ask ``_litellm()``, so litellm stays imported here only.

Reasoning is replayed the way each provider requires in a tool loop: the provider-specific state of
each assistant turn litellm returned (Anthropic ``thinking_blocks`` with their signatures, the
Responses API's ``reasoning_items`` with encrypted content, open-weight providers'
``reasoning_content``, Gemini's per-call thought signatures) is kept by the client, per turn, and
sent back with that turn on every later call of the trial (``ReplayState``;
docs/design/046-provider-fidelity.md says why the adapter keeps it rather than the record).
``params.api: responses`` calls an ``openai/`` model through the Responses API, as the published
runs did (store off, encrypted reasoning replayed), with the model id and record unchanged.

Every exception leaving ``generate`` is built by ``apiflow.models.faults``: redacted, cut to size,
with no chained original (docs/design/045-secrets-and-unscored.md).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

from apiflow.errors import UsageError
from apiflow.models.base import ContextWindowExceeded, GenerateConfig, ModelOutput
from apiflow.models.batch_transport import BATCH
from apiflow.models.caching import cache_ttl, marks_breakpoints, prompt_cache_key, with_breakpoints
from apiflow.models.chat_messages import output_from_response, to_openai_messages
from apiflow.models.faults import fault_text, harness_fault, provider_error, provider_faults
from apiflow.models.provider_fields import RESPONSES_ROUTE, ReplayState, provider_route, replay_state
from apiflow.models.retry import RetryHook, is_quota_error
from apiflow.redact import RedactingFilter, secrets_in

_configured = False
_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


def configure_litellm() -> None:
    """Process-wide litellm settings; the runner calls this once before the first model call.

    Uses the cost map bundled with the wheel (no network fetch at import) and keeps litellm quiet.
    litellm 1.110.2 has no other setting that saves CPU per call without losing something
    (bench/bench_litellm_settings.py); ``telemetry`` is a no-op there, kept for older versions.
    """
    global _configured
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    for name in _LITELLM_LOGGERS:  # litellm masks keys itself; this also covers what it echoes
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
    _configured = True


def _litellm() -> Any:
    """litellm itself, configured: what code beside this module calls for a litellm class or function,
    so this module stays litellm's one importer (tests/architecture)."""
    if not _configured:  # a caller forgot: never let the import fetch the cost map from the network
        configure_litellm()
    import litellm

    return litellm


def check_model_id(model: str) -> None:
    """Refuse a model id no litellm provider claims (a typo, not a provider fault).

    Raises:
        UsageError: litellm cannot route ``model`` to any provider.
    """
    try:
        _litellm().get_llm_provider(model=model)
    except Exception as exc:  # litellm raises its BadRequestError; any refusal means the same here
        raise UsageError(
            f"unknown model {model!r}: no litellm provider for it ({type(exc).__name__})"
        ) from None


async def single_attempt(attempt: Callable[[], Awaitable[Any]], retry_log: list[dict[str, Any]]) -> Any:
    """The default ``RetryHook``: one call, no retries (the grid runner supplies the real policy)."""
    return await attempt()


OPENAI_WIRE_PROVIDERS = frozenset(
    {"openai", "hosted_vllm", "llamafile", "lm_studio", "custom_openai", "openai_like"}
)
"""litellm providers that pass our chat messages as they are to an OpenAI chat-completions server.

litellm drops an assistant message's ``content: None`` key. OpenAI accepts a turn with tool calls and
no ``content``, but OpenAI-compatible servers whose chat template reads every message's content do
not: llama-cpp-python's ``chatml-function-calling`` answers HTTP 500 "'dict object' has no attribute
'content'" (bench/bench_realmodel.py found it). On these routes a turn without text therefore says
``""``, which OpenAI and vLLM accept too. Everywhere else it stays None: litellm turns ``""`` into an
empty text part (``{"text": ""}``) on its Gemini route, which Gemini refuses; litellm's own
conversions for the other providers expect None."""


@functools.lru_cache(maxsize=1024)
def empty_text_for(model: str) -> str | None:
    """What an assistant turn without text carries as ``content`` on ``model``'s route (see above)."""
    try:
        provider = _litellm().get_llm_provider(model=model)[1]
    except Exception:  # an id litellm cannot route fails in acompletion with its own message
        return None
    return "" if provider in OPENAI_WIRE_PROVIDERS else None


class LiteLLMClient:
    """``ModelClient`` for any litellm model id.

    One client plays one trial (``make_model`` builds one per trial): it keeps each assistant
    turn's ``ReplayState`` and sends it back with that turn on every later call. The n-th assistant
    message of the transcript is the n-th turn this client returned; a transcript with fewer
    assistant turns than it holds is a new conversation, and the held state is dropped.

    Args:
        model: litellm model id, e.g. ``openai/gpt-5-mini``; recorded as ``model_api``.
        params: Extra ``acompletion`` keyword arguments (``api_base``, ``api_key``, ``timeout``, ...),
            ``prompt_caching`` (default true: the rolling cache marks on the Claude routes),
            ``cache_ttl`` (the marks' lifetime: ``5m``, ``1h`` or ``1h-prefix``;
            ``caching.cache_ttl``), and ``api`` (``responses``: OpenAI's Responses API, store off,
            encrypted reasoning replayed; ``provider_fields.provider_route``). None of them changes
            ``model_api``, and none reaches the provider as it is.
        retry: The retry layer (``RetryHook``); default one attempt.
        replay: Send reasoning state back (default). Off only to show what a provider does
            without it (the stand-in's tests expect the live API's 400).
    """

    def __init__(
        self,
        model: str,
        params: dict[str, Any] | None = None,
        retry: RetryHook | None = None,
        *,
        replay: bool = True,
    ) -> None:
        self.model_api = model
        self.route, self.params = provider_route(model, dict(params or {}))
        """The litellm route called: ``model`` itself, or its Responses route when ``params.api`` says so."""
        caching = self.params.pop("prompt_caching", True)
        if not isinstance(caching, bool):
            raise UsageError(f"params.prompt_caching must be true or false, got {caching!r}")
        self.marks_breakpoints = caching and marks_breakpoints(model)
        """Send the rolling cache marks (``apiflow.models.caching``): on by default where the
        provider caches only at marks."""
        self.cache_ttl = cache_ttl(self.params)
        """The marks' lifetime; ours, not a provider argument, so it is taken out of ``params``."""
        self.params.pop("cache_ttl", None)
        self.cache_key = caching and model.startswith("openai/")
        """Send OpenAI's ``prompt_cache_key``, the same for every trial of a task (its system and user
        prompt): OpenAI caches on its own, and the key routes requests sharing a prefix together."""
        self._keyed: tuple[Any, str] | None = None  # (the opening user message, its key)
        self.retry: RetryHook = retry or single_attempt
        self.batch: Any = None
        """The trial's wire to the batch tier (``cluster.batching.BatchWire``: a ``transport`` and the
        litellm ``client`` over it), set by a worker for a ``tier: batch`` model; None: synchronous."""
        self.secrets = frozenset(secrets_in(self.params))
        """Credential values of ``params`` (``api_key``, auth headers), redacted with the environment's."""
        self.replay = replay
        self.turns: list[ReplayState | None] = []
        """Replay state of each assistant turn returned so far (None: nothing to send back)."""
        self._sent: list[dict[str, Any]] = []
        self._converted: list[dict[str, Any]] = []
        self._sent_turns = 0

    def _openai_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``to_openai_messages`` of the transcript, converting only what is new since the last call.

        The loop appends to the conversation and never edits a message it has sent, so when the
        earlier messages are the very objects converted last time their conversion (and the replay
        state attached to it, fixed once its turn returned) still holds; anything else (a new
        conversation, an edited history) is converted from scratch. Saves re-serialising every
        earlier tool call on each call of a long trial (bench/bench_provider.py).
        """
        known = len(self._sent)
        if known > len(messages) or any(a is not b for a, b in zip(self._sent, messages, strict=False)):
            self._sent, self._converted, self._sent_turns, known = [], [], 0, 0
        tail = messages[known:]
        replay = self.turns[self._sent_turns :] if self.replay else ()
        self._converted.extend(to_openai_messages(tail, replay, empty_text_for(self.route)))
        self._sent.extend(tail)
        self._sent_turns += sum(m["role"] == "assistant" for m in tail)
        return list(self._converted)

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        """One provider call; provider faults raise ``LiteLLMProviderError`` with the retry log."""
        litellm = _litellm()
        held = sum(m.get("role") == "assistant" for m in messages)
        if held < len(self.turns):  # a new conversation: earlier turns' state is not its own
            self.turns.clear()
        kwargs: dict[str, Any] = {
            # The provider SDK retries twice by default; the one retry layer is ours (models/retry.py).
            "max_retries": 0,
            **self.params,
            "model": self.route,
            "messages": self._openai_messages(messages),
            "temperature": config.temperature,
            "num_retries": 0,
            **config.extra,
        }
        if self.route.startswith(RESPONSES_ROUTE) and kwargs["temperature"] == 1.0:
            # The API's own default: not sent, as reasoning models on the Responses API may refuse
            # the parameter itself; what the model generates is the same.
            del kwargs["temperature"]
        if self.marks_breakpoints:
            kwargs["messages"], tools = with_breakpoints(kwargs["messages"], tools, self.cache_ttl)
        if self.cache_key and "prompt_cache_key" not in kwargs:
            opening = messages[1] if len(messages) > 1 else None
            if self._keyed is None or self._keyed[0] is not opening:  # once a conversation, not a call
                self._keyed = (opening, prompt_cache_key(messages))
            kwargs["prompt_cache_key"] = self._keyed[1]
        if tools:
            kwargs["tools"] = tools
        if config.max_tokens is not None:
            kwargs["max_tokens"] = config.max_tokens
        if self.batch is not None:  # litellm builds and parses as ever; only the wire is a batch
            kwargs["client"] = self.batch.client
            self.batch.transport.turn = held
        retry_log: list[dict[str, Any]] = []
        try:
            response = await self.retry(lambda: litellm.acompletion(**kwargs), retry_log)
        except provider_faults() as exc:
            if isinstance(exc, litellm.ContextWindowExceededError):  # the model's limit, not a fault
                raise ContextWindowExceeded(fault_text(exc, self.secrets), tuple(retry_log)) from None
            raise provider_error(exc, retry_log, self.secrets) from None
        except Exception as exc:  # a harness bug: still loud, but its text may quote the request too
            raise harness_fault(exc, self.secrets) from None
        output = output_from_response(response)
        state = replay_state(response.choices[0].message)
        self.turns.extend([None] * (held - len(self.turns)))  # turns this client did not produce
        self.turns.append(None if state.empty else state)
        if retry_log:
            output = dataclasses.replace(output, retries=tuple(retry_log))
        if self.batch is not None and self.batch.transport.last_tier == BATCH:
            output = dataclasses.replace(output, tier=BATCH)  # priced at the batch tier
        return output


def missing_key(model: str, params: dict[str, Any]) -> str | None:
    """Why ``model`` cannot authenticate from here, without calling it; None when a key is in reach.

    A key in the model's params wins; otherwise litellm names the environment variables its route
    reads (``validate_environment``). A route that needs none (a local server) passes.
    """
    if params.get("api_key"):
        return None
    found = _litellm().validate_environment(model=model)
    if found.get("keys_in_environment", True):
        return None
    names = ", ".join(found.get("missing_keys") or ()) or "its key"
    return f"{model}: no API key: set {names} (or the model's params.api_key)"


async def rejected_key(model: str, params: dict[str, Any]) -> str | None:
    """Why the provider refuses this key, by one call of one output token; None when it answered or
    failed for another reason (the trials then meet that fault through the retry layer)."""
    litellm = _litellm()
    secrets = frozenset(secrets_in(params))
    route, sent = provider_route(model, params)
    kwargs: dict[str, Any] = {"max_retries": 0, **sent, "num_retries": 0}
    kwargs.pop("prompt_caching", None)
    kwargs.pop("cache_ttl", None)
    try:
        ping = [{"role": "user", "content": "ping"}]
        await litellm.acompletion(model=route, messages=ping, max_tokens=1, **kwargs)
    except provider_faults() as exc:
        refused = type(exc).__name__ in ("AuthenticationError", "PermissionDeniedError")
        if refused or getattr(exc, "status_code", 0) in (401, 403):
            return f"{model}: the provider refused the key: {fault_text(exc, secrets)}"
        if is_quota_error(exc):
            return f"{model}: the account is out of quota or credit: {fault_text(exc, secrets)}"
    except Exception:  # noqa: BLE001 - anything else is for the trials' retry layer to meet and record
        return None
    return None
