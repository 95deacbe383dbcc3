"""The agent's workspace: entities (spec, requests, responses, handles) and scoped variables.

One workspace lives for one trial. Everything in it is deterministic: ids come from a
``random.Random`` seeded with the trial's id seed and timestamps from a logical clock, so
the same trial replays to byte-identical tool results (no wall clock, no uuid4, no global
random).

The workspace is also the trial's evidence for grading: ``exchanges`` lists every request
sent to the world in send order, ``variables()`` the final variable values and
``changed_variables`` which of them the agent wrote.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NamedTuple, Protocol

from apiflow.tools.limits import WORKSPACE_CHARS, WORKSPACE_ENTITIES, LimitError
from apiflow.tools.refs import EntityRef, make_ref
from apiflow.tools.result import ToolError
from apiflow.world.http import HttpResponse

Scope = Literal["vault", "local", "global"]
# Lookup order of an unscoped variable read (REFERENCE §2.1: "searches vault→local→global").
SCOPES: tuple[str, ...] = ("vault", "local", "global")
DEFAULT_WRITE_SCOPE = "local"
SPEC_REF = make_ref("spec", "openapi")
# A fixed origin for the logical clock; only order and determinism matter.
CLOCK_START = datetime(2026, 1, 1, tzinfo=UTC)
CLOCK_STEP = timedelta(milliseconds=1)

Origin = Literal["seed", "write", "execute"]


class SeedLike(Protocol):
    """What a seed variable must offer (``apiflow.bank.task.SeedVariable`` does)."""

    @property
    def scope(self) -> str: ...  # noqa: D102

    @property
    def name(self) -> str: ...  # noqa: D102

    @property
    def value(self) -> Any: ...  # noqa: D102


class VariableValue(NamedTuple):
    """One variable's final value."""

    scope: str
    name: str
    value: Any


@dataclass(slots=True)
class Entity:
    """One stored entity; ``content`` is exactly what ``read`` shows."""

    ref: EntityRef
    content: Any
    stamped: datetime
    origin: Origin
    search_text: str | None = field(default=None, repr=False, compare=False)
    """``search``'s lower-cased text of this entity, made on first search (an entity never changes:
    a write or edit stores a new one), so repeated searches of a large workspace stay cheap."""

    @property
    def updated_at(self) -> str:
        """When it was last written, e.g. ``2026-01-01T00:00:00.001000+00:00``.

        Formatted on demand: most entities are never read back, and formatting is the dearer half.
        """
        return self.stamped.isoformat(timespec="microseconds")


class Exchange(NamedTuple):
    """One request sent to the world, with what came back (a NamedTuple: immutable, cheap to build).

    Attributes:
        request_ref: e.g. ``request:req-1a2b3c`` or ``request:mint-token``.
        response_ref: e.g. ``request:req-1a2b3c/response:resp-0a1b2c3d``; None on a network error.
        request: ``{protocol, method, url, headers, body}`` as sent (headers in the agent's case).
        response: The world's answer; None on a network error.
        network_error: The network-error text (``network: ConnectError: ...``) or None.
    """

    request_ref: str
    response_ref: str | None
    request: dict[str, Any]
    response: HttpResponse | None
    network_error: str | None = None


_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts and lists; scalars are immutable), ~5x faster than deepcopy.

    Scalar items are taken as they are without a call each (most of a request's leaves are strings);
    an object is copied by a loop rather than a comprehension (a call of its own on Python 3.11).
    """
    kind = type(value)
    if kind is dict or (kind is not list and isinstance(value, dict)):
        out = {}
        for key in value:
            item = value[key]
            out[key] = item if type(item) in _SCALARS else json_copy(item)
        return out
    if kind is list or isinstance(value, list):
        return [item if type(item) in _SCALARS else json_copy(item) for item in value]
    return value


class LogicalClock:
    """Timestamps for ``updated_at``: ISO 8601 with microseconds, advancing per event."""

    def __init__(self, start: datetime = CLOCK_START, step: timedelta = CLOCK_STEP) -> None:
        self._now = start
        self._step = step

    def advance(self) -> datetime:
        """Advance one step and return the new time."""
        self._now += self._step
        return self._now

    def tick(self) -> str:
        """Advance one step and return the new time, e.g. ``2026-01-01T00:00:00.001000+00:00``."""
        return self.advance().isoformat(timespec="microseconds")


class IdFactory:
    """Request/response ids in the published shapes, from one seeded generator."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self._issued: set[str] = set()

    def _fresh(self, prefix: str, hex_digits: int) -> str:
        while True:
            ident = f"{prefix}-{self._rng.getrandbits(4 * hex_digits):0{hex_digits}x}"
            if ident not in self._issued:
                self._issued.add(ident)
                return ident

    def request_id(self) -> str:
        """``req-<6 hex>``."""
        return self._fresh("req", 6)

    def response_id(self) -> str:
        """``resp-<8 hex>``."""
        return self._fresh("resp", 8)


@dataclass
class _Variables:
    """Scope -> name -> value; scopes kept in lookup order, then any agent-made scope."""

    by_scope: dict[str, dict[str, Any]] = field(default_factory=lambda: {s: {} for s in SCOPES})
    held: int = 0  # how many variables: kept as they are set, since every execute asks (ensure_room)

    def set(self, scope: str, name: str, value: Any) -> None:
        values = self.by_scope.setdefault(scope, {})
        self.held += name not in values
        values[name] = value

    def has(self, scope: str, name: str) -> bool:
        return name in self.by_scope.get(scope, ())

    def find(self, name: str, scopes: Iterable[str]) -> tuple[str, Any] | None:
        for scope in scopes:
            values = self.by_scope.get(scope, {})
            if name in values:
                return scope, values[name]
        return None

    def all(self) -> list[VariableValue]:
        return [VariableValue(s, n, v) for s, values in self.by_scope.items() for n, v in values.items()]


class Workspace:
    """Entities and variables of one trial.

    Args:
        seed_variables: The task's seed (vault/local/global variables).
        spec_content: The ``spec:openapi`` entity content
            (``{format, title, served_at, description, document}``).
        id_seed: Seed of the request/response id generator.
        clock_start: Origin of the logical clock behind ``updated_at``.
    """

    def __init__(
        self,
        seed_variables: Iterable[SeedLike],
        spec_content: dict[str, Any],
        id_seed: int,
        clock_start: datetime = CLOCK_START,
    ) -> None:
        self.ids = IdFactory(id_seed)
        self.clock = LogicalClock(clock_start)
        self._entities: dict[str, Entity] = {}
        self._vars = _Variables()
        self.changed_variables: set[tuple[str, str]] = set()
        self.exchanges: list[Exchange] = []
        self.stored_chars = 0
        """Characters of content the model stored so far (bounded by ``WORKSPACE_CHARS``)."""
        self.put_entity(SPEC_REF, spec_content, "seed")
        for seed in seed_variables:
            self._vars.set(seed.scope, seed.name, seed.value)

    # -- entities ---------------------------------------------------------------------------

    def put_entity(
        self, ref: EntityRef, content: Any, origin: Origin, key: str | None = None, room_checked: bool = False
    ) -> Entity:
        """Create or replace an entity (a replaced entity keeps its place in search order).

        Agent-authored content (``write``/``edit``/inline requests) is copied: tool arguments
        may be shared objects (an oracle's golden calls live in the bank's task), and evidence
        must not change behind the workspace's back. The spec and world responses are not
        copied (nothing mutates them, and copying every body would double the per-call cost).
        ``key`` is ``str(ref)`` when the caller has made it already; ``room_checked`` says the caller
        made room for this entity with ``ensure_room`` and nothing was added since (``execute``).
        """
        if key is None:
            key = str(ref)
        if origin != "seed" and not room_checked and key not in self._entities:
            self.ensure_room(1)
        stored = json_copy(content) if origin != "seed" and ref.kind != "response" else content
        entity = Entity(ref, stored, self.clock.advance(), origin)
        self._entities[key] = entity
        return entity

    def ensure_room(self, new: int) -> None:
        """Refuse, before anything changes, a call that would add ``new`` entities over the bound.

        Raises:
            LimitError: ``workspace_entities``.
        """
        held = len(self._entities) + self._vars.held
        if held + new > WORKSPACE_ENTITIES:
            raise LimitError(
                "workspace_entities", f"The workspace already holds {held:,} entities and variables"
            )

    def charge_stored(self, chars: int) -> None:
        """Count ``chars`` more characters of model-stored content, refusing a call over the bound.

        Raises:
            LimitError: ``workspace_chars`` (nothing is counted then).
        """
        if self.stored_chars + chars > WORKSPACE_CHARS:
            raise LimitError("workspace_chars", f"The model has stored {self.stored_chars:,} characters")
        self.stored_chars += chars

    def find_entity(self, ref: EntityRef) -> Entity | None:
        """The entity at ``ref``, or None."""
        return self._entities.get(str(ref))

    def get_entity(self, ref: EntityRef) -> Entity:
        """The entity at ``ref``.

        Raises:
            ToolError: ``Entity <ref> not found.`` (a response needs its parent request in the ref).
        """
        entity = self._entities.get(str(ref))
        if entity is None:
            raise ToolError(f"Entity {ref} not found.")
        return entity

    def all_entities(self) -> list[Entity]:
        """Every entity in creation order: the spec first, then requests/responses/handles."""
        return list(self._entities.values())

    @property
    def entities(self) -> dict[str, Entity]:
        """Request and handle entities (agent-authored content), keyed by ref string, in creation order.

        The spec and responses are left out on purpose: they come from the world, so a value
        found in them says nothing about what the agent stored.
        """
        return {k: e for k, e in self._entities.items() if e.ref.kind in ("request", "handle")}

    # -- variables --------------------------------------------------------------------------

    def read_variable(self, name: str, scope: str | None) -> VariableValue:
        """Look a variable up in ``scope``, or vault→local→global when no scope is given.

        Raises:
            ToolError: ``Variable '<name>' not found in scope(s): <scopes>``.
        """
        scopes = (scope,) if scope else SCOPES
        found = self._vars.find(name, scopes)
        if found is None:
            raise ToolError(f"Variable '{name}' not found in scope(s): {', '.join(scopes)}")
        return VariableValue(found[0], name, found[1])

    def write_variable(self, scope: str, name: str, value: Any) -> None:
        """Set a variable as the agent; the scope string is not validated (as published).

        Raises:
            LimitError: A new variable would take the workspace over ``WORKSPACE_ENTITIES``.
        """
        if not self._vars.has(scope, name):
            self.ensure_room(1)
        self._vars.set(scope, name, value)
        self.changed_variables.add((scope, name))

    def variables(self) -> list[VariableValue]:
        """Final values of all variables: vault, local, global, then agent-made scopes."""
        return self._vars.all()

    # -- exchanges --------------------------------------------------------------------------

    def record_exchange(self, exchange: Exchange) -> None:
        """Append one sent request to the evidence log."""
        self.exchanges.append(exchange)
