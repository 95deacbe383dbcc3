"""Model plug-ins: installed packages that serve ``<prefix>/<anything>`` through an entry point.

A distribution declares, in its ``pyproject.toml``::

    [project.entry-points."apiflow.models"]
    my-agent = "my_agent:make_model"

and ``my-agent/<anything>`` then names one of its models in ``apiflow run``, a grid, and the
notebook API, with no change to apiflow. The entry point's name is the prefix; its value is
either a factory ``(name, task, seed, params) -> ModelClient`` or an object with a ``make_model``
method of that signature and, optionally, ``check(name)`` (raise to refuse a name before any
trial runs) and ``prices`` (USD per million tokens, ``apiflow.results.prices.Prices`` fields).

Lazy on purpose: the entry-point table is read once, on the first name that is neither built-in
nor external, and a plug-in's module is imported only when a name with its prefix is used (an
installed but unused plug-in costs nothing and cannot break other runs). A plug-in never wins
over a route litellm knows: an entry point named like a litellm provider (``openai``, ``hosted_vllm``...)
is ignored, so installing a package can never redirect ``openai/...`` trials to it
(docs/design/080-plugins.md).

Faults: a plug-in that cannot be loaded, or refuses a name, is a ``UsageError`` naming its
distribution when the name is checked. Inside a trial, its ``generate`` runs on a thread of the
trial's own (``apiflow.models.agent_thread``), so the trial's clock holds however it blocks; a model
that raises in ``generate`` (``KeyboardInterrupt`` and ``SystemExit`` too) or breaks the contract is
the agent's outcome (``AgentFault``: scored, the cause in ``apiflow.agent_error``);
a factory that raises, or a worker without the plug-in, is a ``harness_error``. Either is logged as
one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import importlib.metadata
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiflow.bank.task import Task
from apiflow.errors import UsageError
from apiflow.models.agent_thread import AgentThread, cancelled_here
from apiflow.models.base import AgentFault, ContextWindowExceeded, GenerateConfig, ModelClient, ModelOutput
from apiflow.redact import record_secrets, redact, secrets_in
from apiflow.results.prices import Prices

GROUP = "apiflow.models"
"""The entry-point group plug-ins register under."""

RESERVED_PREFIXES = frozenset({"apiflow", "external"})
"""Prefixes apiflow routes itself; an entry point claiming one (or a litellm route) is never consulted."""

FREE = Prices(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0, reasoning=0.0)
"""A plug-in's price unless it declares one (or the price table names it)."""

Factory = Callable[[str, Task, int, "dict[str, Any] | None"], ModelClient]


class PluginError(UsageError):
    """A plug-in could not be loaded, refused a name, or broke the ``ModelClient`` contract."""


@dataclass(frozen=True, slots=True)
class LoadedPlugin:
    """One plug-in, imported.

    Attributes:
        prefix: The entry point's name (``my-agent`` serves ``my-agent/<anything>``).
        origin: ``distribution version`` (what error messages and docs name).
        factory: Builds the model of one trial.
        check: Optional name validator (raises to refuse).
        prices: Declared prices, or None (then the price table, else free).
    """

    prefix: str
    origin: str
    factory: Factory
    check: Callable[[str], Any] | None
    prices: Prices | None


def plugin_prefix(name: str) -> str | None:
    """The installed plug-in prefix that serves ``name``, or None."""
    prefix, sep, _ = name.partition("/")
    if not sep or prefix in RESERVED_PREFIXES:
        return None
    return prefix if prefix in _entry_points() else None


def is_plugin(name: str) -> bool:
    """True when an installed plug-in serves ``name``."""
    return plugin_prefix(name) is not None


def installed_plugins() -> dict[str, str]:
    """Prefix -> ``distribution version`` of every installed plug-in apiflow will route to
    (nothing is imported)."""
    return {prefix: _origin(points) for prefix, points in sorted(_entry_points().items())}


@functools.cache
def _entry_points() -> dict[str, tuple[importlib.metadata.EntryPoint, ...]]:
    # Read once per process: scanning every installed distribution is the only cost of the lookup.
    table: dict[str, tuple[importlib.metadata.EntryPoint, ...]] = {}
    for point in importlib.metadata.entry_points(group=GROUP):
        if point.name not in RESERVED_PREFIXES and point.name not in litellm_routes():
            table[point.name] = (*table.get(point.name, ()), point)
    return table


@functools.cache
def builtin_factory(prefix: str) -> Factory:
    """The factory apiflow itself registers for a reserved prefix (``external``: the MCP agent kind,
    which lives above the models layer, in ``apiflow.mcp``, and so is reached through the entry
    point its own distribution declares rather than imported from here).

    Raises:
        PluginError: apiflow's own entry point is missing (an install whose metadata predates it).
    """
    for point in importlib.metadata.entry_points(group=GROUP, name=prefix):
        if point.dist is not None and point.dist.name == "apiflow":
            factory: Factory = point.load()
            return factory
    raise PluginError(
        f"{prefix}/... needs apiflow's own {GROUP!r} entry point {prefix!r}: reinstall apiflow "
        "(pip install -e . in a clone)"
    )


def _origin(points: tuple[importlib.metadata.EntryPoint, ...]) -> str:
    names = []
    for point in points:
        dist = point.dist
        names.append(f"{dist.name} {dist.version}" if dist is not None else point.value)
    return " and ".join(dict.fromkeys(names))


@functools.cache
def load_plugin(prefix: str) -> LoadedPlugin:
    """Import the plug-in serving ``prefix`` (once per process).

    Raises:
        PluginError: Not installed, claimed by two distributions, or its target cannot be imported
            or is neither a factory nor an object with ``make_model``.
    """
    points = _entry_points().get(prefix)
    if not points:
        raise PluginError(f"no plug-in serves {prefix}/...: no {GROUP!r} entry point named {prefix!r}")
    origin = _origin(points)
    if len({p.value for p in points}) > 1:
        raise PluginError(f"plug-in prefix {prefix!r} is claimed by more than one distribution ({origin})")
    try:
        target = points[0].load()
    except Exception as exc:  # noqa: BLE001 - any import failure of a third-party package: say whose
        raise PluginError(
            f"plug-in {prefix!r} ({origin}) failed to load {points[0].value}: {type(exc).__name__}: {exc}"
        ) from None
    factory = getattr(target, "make_model", None) or (target if callable(target) else None)
    if not callable(factory):
        raise PluginError(
            f"plug-in {prefix!r} ({origin}): {points[0].value} is neither a factory nor has make_model"
        )
    check = getattr(target, "check", None)
    return LoadedPlugin(prefix, origin, factory, check if callable(check) else None, _prices(target, origin))


def _prices(target: Any, origin: str) -> Prices | None:
    declared = getattr(target, "prices", None)
    if declared is None or isinstance(declared, Prices):
        return declared
    try:
        return Prices(**{**FREE.model_dump(), **dict(declared)})
    except (TypeError, ValueError) as exc:
        raise PluginError(f"plug-in {origin}: bad prices {declared!r} ({exc})") from None


def check_plugin_name(name: str) -> None:
    """Refuse a plug-in name before any trial runs: load the plug-in, ask its ``check``.

    Raises:
        PluginError: Empty model part, a load failure, or the plug-in's own ``check`` refused the name.
    """
    prefix = _served(name)
    if not name[len(prefix) + 1 :]:
        raise PluginError(f"bad model name {name!r}: {prefix}/<model> names one of the plug-in's models")
    plugin = load_plugin(prefix)
    if plugin.check is not None:
        try:
            plugin.check(name)
        except Exception as exc:  # noqa: BLE001 - the plug-in's refusal, whatever it raises, is a usage error
            raise PluginError(f"plug-in {prefix!r} ({plugin.origin}) refused {name!r}: {exc}") from None


@functools.cache
def litellm_routes() -> frozenset[str]:
    """litellm's provider route names, from a snapshot shipped with apiflow.

    A snapshot rather than asking litellm: importing it costs seconds of CPU and much memory in
    every process that checks a plug-in name (each grid actor does), and litellm is optional.
    """
    text = (Path(__file__).parent / "litellm_routes.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def plugin_prices(name: str) -> Prices:
    """A plug-in model's declared prices, else free (a price table entry, when present, wins)."""
    return load_plugin(_served(name)).prices or FREE


def _served(name: str) -> str:
    prefix = plugin_prefix(name)
    if prefix is None:
        raise PluginError(f"{name!r} is not served by a plug-in")
    return prefix


def make_plugin_model(name: str, task: Task, seed: int, params: dict[str, Any] | None) -> ModelClient:
    """The plug-in model of one trial; a plug-in fault becomes a model that fails the trial as a
    harness error (the trial is recorded, unscored, and retried on resume)."""
    prefix = _served(name)
    secrets = frozenset(secrets_in(params or {}))
    try:
        plugin = load_plugin(prefix)
    except PluginError as exc:
        return BrokenModel(name, str(exc), secrets)
    try:
        # A copy of the task (the answer key included: an agent may use what its plug-in is given):
        # the bank's own objects are graded against and shared by every trial of the process.
        model = plugin.factory(name, task.model_copy(deep=True), seed, copy.deepcopy(params))
    except Exception as exc:  # noqa: BLE001 - the plug-in's bug, recorded on its trial
        return BrokenModel(
            name, f"plug-in {prefix!r} ({plugin.origin}) factory raised {_one_line(exc, secrets)}", secrets
        )
    if not isinstance(model, ModelClient) or not isinstance(getattr(model, "model_api", None), str):
        return BrokenModel(
            name,
            f"plug-in {prefix!r} ({plugin.origin}) returned {type(model).__name__}, not a ModelClient "
            "(an object with a model_api string and an async generate(messages, tools, config))",
            secrets,
        )
    return PluginModel(model, name, plugin.origin, secrets)


def _one_line(exc: BaseException, secrets: frozenset[str]) -> str:
    """The exception's first line, redacted before it is cut (a cut key would no longer match)."""
    text = redact(f"{type(exc).__name__}: {exc}", secrets) if str(exc) else type(exc).__name__
    return text.splitlines()[0][:500] if text else text


logger = logging.getLogger(__name__)

END_TRIAL_S = 10.0
"""How long a plug-in's ``end_trial`` hook may take (it runs after the trial's clock has stopped)."""


class PluginModel:
    """A plug-in's model, with its faults named: whatever its ``generate`` raises (its own provider's
    ``ProviderError`` included: the harness did not see that wire; ``KeyboardInterrupt``,
    ``SystemExit`` or a ``CancelledError`` of its own too), or a return that is not a ``ModelOutput``,
    becomes an ``AgentFault`` naming the plug-in: the agent's outcome, scored. A plug-in cannot hide the
    tasks it fails by failing loudly (``ContextWindowExceeded`` is its limit, scored as one).

    Its ``generate`` runs on the trial's ``AgentThread`` (started on the first turn, ended by
    ``release`` when the loop ends): a plug-in that blocks cannot hold the trial's clock or its
    process, and a Ctrl-C, delivered to the main thread, is never one it raised.

    ``secrets`` are the credential values of its params (``apiflow.redact.secrets_in``): every error
    text the trial records is redacted with them and the environment's."""

    def __init__(
        self, inner: ModelClient, name: str, origin: str, secrets: frozenset[str] = frozenset()
    ) -> None:
        self.inner = inner
        self.origin = origin
        self.model_api = inner.model_api or name
        self.secrets = secrets
        self.agent_code = True  # what it returns is the agent's: a turn that breaks on reading is its fault
        self.thread: AgentThread | None = None

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        thread = self.thread
        if thread is None:
            thread = self.thread = AgentThread()
            weakref.finalize(self, thread.close)  # a caller that never releases it (no loop) frees it too
        return await thread.run(self._turn(messages, tools, config))

    async def _turn(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        """One call of the plug-in, on its thread: nothing it raises leaves as anything but its fault."""
        try:
            output = await self.inner.generate(messages, tools, config)
        except ContextWindowExceeded:
            raise  # its own limit, scored as one
        except asyncio.CancelledError as exc:
            if cancelled_here():
                raise  # the trial stopped waiting (its clock ran out): nobody reads this turn
            raise self._fault(exc) from None
        except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt and SystemExit too: the agent's code
            raise self._fault(exc) from None
        if not isinstance(output, ModelOutput):
            raise AgentFault(
                f"plug-in model {self.model_api} ({self.origin}) returned {type(output).__name__}, not a ModelOutput"
            )
        return output

    def _fault(self, exc: BaseException) -> AgentFault:
        text = _one_line(exc, self.secrets)
        return AgentFault(f"plug-in model {self.model_api} ({self.origin}) raised {text}")

    async def end_trial(self, messages: list[dict[str, Any]]) -> None:
        """The plug-in's own ``end_trial`` hook, if it has one, told the trial is over.

        The outcome is fixed by now and grading comes next, so the hook gets a copy of the
        transcript (it cannot rewrite the record), runs on a thread of its own under
        ``END_TRIAL_S`` (it cannot hold the trial), and whatever it raises is logged as one line
        and changes nothing (it cannot turn a graded trial into an unscored one).
        """
        hook = getattr(self.inner, "end_trial", None)
        if hook is None:
            return
        thread = AgentThread()
        try:
            async with asyncio.timeout(END_TRIAL_S):
                await thread.run(hook(copy.deepcopy(messages)))
        except BaseException as exc:  # noqa: BLE001 - the agent's code: never the trial's outcome
            if isinstance(exc, asyncio.CancelledError) and cancelled_here():
                raise
            logger.warning("plug-in model %s: end_trial ignored: %s", self.model_api, _one_line(exc, self.secrets))
        finally:
            thread.close()

    def release(self) -> None:
        """End the trial's thread (the loop's last act): at once when idle, else when its block ends."""
        thread, self.thread = self.thread, None
        if thread is not None:
            thread.close()

    def __getattr__(self, attr: str) -> Any:
        # Optional hooks a trial may look for (e.g. ``end_trial``) reach the plug-in's model.
        if attr in ("inner", "thread"):  # not set yet (copy, unpickling): no recursion
            raise AttributeError(attr)
        return getattr(self.inner, attr)


class BrokenModel:
    """Stands in for a model that could not be built for a trial (a plug-in's fault, or a worker
    without the plug-in): its first turn raises the reason, so the trial ends as a harness error."""

    def __init__(self, name: str, reason: str, secrets: frozenset[str] = frozenset()) -> None:
        self.model_api = name
        self.reason = reason
        self.secrets = secrets

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        raise PluginError(self.reason)


class _OneLinePluginFaults(logging.Filter):
    """Keeps a plug-in's fault to one log line: the trial records it, a traceback adds nothing.
    The line is redacted here too, whichever of this and the loop's ``RedactingFilter`` runs first."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PluginError):
            record.msg = redact(f"{record.getMessage()}: {record.exc_info[1]}", record_secrets(record))
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


logging.getLogger("apiflow.agent.loop").addFilter(_OneLinePluginFaults())
