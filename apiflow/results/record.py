"""The trial record: the published APIFlow-Bench 1.0 trial JSON, plus our own block.

Top-level keys keep the published order (schema_version … provenance). Everything
apiflow adds lives in one trailing ``apiflow`` object so that a 1.0 reader sees
exactly the fields it knows (docs/design/002-trial-record.md).
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, Final, Literal, NewType

import orjson
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

SCHEMA_VERSION: Final = "1.0"
BENCH_NAME = "apiflow"

TrialId = NewType("TrialId", str)


class Termination(StrEnum):
    """Why a trial stopped. ``provider_error`` and ``harness_error`` are never model failures."""

    ANSWERED = "answered"
    NO_ANSWER = "no_answer"
    CLARIFY = "clarify"
    REPORT_BLOCKED = "report_blocked"
    LIMIT = "limit"
    PROVIDER_ERROR = "provider_error"
    HARNESS_ERROR = "harness_error"


HARNESS_OUTCOMES = frozenset({Termination.PROVIDER_ERROR, Termination.HARNESS_ERROR})


class Tokens(BaseModel):
    """Published token block: ``total = input + output + cache`` (cache = cache reads)."""

    model_config = ConfigDict(extra="forbid")

    input: int = 0
    output: int = 0
    cache: int = 0
    total: int = 0


class TokensDetail(BaseModel):
    """Tokens by priced kind (what our cost is computed from).

    ``cache_write_1h``: the part of ``cache_write`` written for an hour (priced apart); written only
    when not 0, so the records of trials without one-hour writes keep their exact bytes.
    """

    model_config = ConfigDict(extra="forbid")

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cache_write_1h: int = Field(default=0, exclude_if=lambda count: not count)


class Provenance(BaseModel):
    """Published provenance block."""

    model_config = ConfigDict(extra="forbid")

    bench: str = BENCH_NAME
    run_id: str
    epoch: int
    created: str


class LimitHit(BaseModel):
    """One bound on model input that a trial hit: its name, its value, how often."""

    model_config = ConfigDict(extra="forbid")

    limit: str
    value: int
    hits: int


_OMITTED_WHEN_EMPTY = ("limits_hit", "input_repairs", "served", "agent_error", "canary_key_id")


class ApiflowBlock(BaseModel):
    """Our own fields: identity, reproducibility and harness accounting.

    ``limits_hit`` and ``input_repairs`` (docs/design/031-untrusted-model-input.md) are written
    only when not empty, so the record of a trial that met no bound keeps its exact bytes.
    """

    model_config = ConfigDict(extra="forbid")

    trial_id: str
    bank: str
    bank_hash: str
    seed: int
    termination: Termination
    limit: str | None = None
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    parse_errors: int = 0
    tokens: TokensDetail = Field(default_factory=TokensDetail)
    cost_usd: float | None = None
    provider_cost_usd: float | None = None
    retries: list[dict[str, Any]] = Field(default_factory=list)
    served: list[list[str]] = Field(default_factory=list)
    """Per provider call, what the provider said served it: ``[model, fingerprint, request id]``, then
    the tier it served the call at when it named one (the tier the call is priced at); omitted when no
    call had a provider: offline models' records are unchanged."""
    harness_error: str | None = None
    agent_error: str | None = None
    """Why the agent's own code ended the trial (a plug-in raised, an external agent left): the trial is
    scored; omitted when none."""
    grader: str | None = None
    agent_version: str = ""
    tool_schema_hash: str = ""
    limits_hit: list[LimitHit] = Field(default_factory=list)
    input_repairs: dict[str, int] = Field(default_factory=dict)
    canary_key_id: str | None = None
    """The id of the secret key the trial's canary forms derive from (``apiflow.results.canary_key``;
    never the key); omitted for forms derived from the seed alone."""

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in _OMITTED_WHEN_EMPTY:
            if not data.get(key):
                data.pop(key, None)
        return data


class TrialRecord(BaseModel):
    """One trial, serialisable byte-compatibly with the published 1.0 files."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1.0"] = SCHEMA_VERSION
    model: str
    model_api: str
    task_id: str
    trial: int
    verdict: Literal["C", "I", ""] = ""
    passed: bool | None = None
    failure_reason: str = ""
    tokens: Tokens = Field(default_factory=Tokens)
    duration_s: float = 0.0
    messages: list[dict[str, Any]] = Field(default_factory=list)
    verifier: dict[str, Any] | None = None
    provenance: Provenance
    apiflow: ApiflowBlock

    def to_json(self) -> str:
        """Compact JSON as the published files are written (raw non-ASCII, no trailing newline)."""
        fast = self._plain_json()
        return fast.decode() if fast is not None else _dumps(self.model_dump(mode="json"))

    def to_json_bytes(self) -> bytes:
        """``to_json().encode()``, the same bytes (what the store writes)."""
        fast = self._plain_json()
        return fast if fast is not None else _dumps(self.model_dump(mode="json")).encode()

    def _plain_json(self) -> bytes | None:
        """The record's JSON through orjson, with ``messages`` and ``verifier`` taken as they are.

        Those two are typed ``Any`` inside, and pydantic's ``model_dump`` infers the type of every
        value in them (about 80 % of the cost of serialising a record). When orjson can write the
        whole record exactly (``_orjson_bytes``), they hold only str-keyed dicts, lists, str, int,
        bool, None and plain floats, which ``model_dump(mode="json")`` returns unchanged, so
        passing them through gives the same bytes; anything else (None here) takes the full path.
        """
        head = self.model_dump(mode="json", exclude=_PASSED_THROUGH)
        data = {key: getattr(self, key) if key in _PASSED_THROUGH else head[key] for key in _FIELD_ORDER}
        return _orjson_bytes(data)

    @property
    def is_harness_outcome(self) -> bool:
        """True when the trial says nothing about the model (provider or harness fault)."""
        return self.apiflow.termination in HARNESS_OUTCOMES


_PASSED_THROUGH: Final[set[str]] = {"messages", "verifier"}  # a set: what model_dump(exclude=) takes
_FIELD_ORDER: Final = tuple(TrialRecord.model_fields)


def json_bytes(data: Any) -> bytes:
    """``json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()``, byte for byte, ~5x cheaper.

    orjson writes what ``json.dumps`` writes for str keys, strings (raw non-ASCII, the same
    escapes), ints, bools, None and every float that ``repr`` shows without an exponent; it
    differs on the rest (``1e-05`` is ``0.00001`` there, NaN is ``null``) and refuses ints past
    64 bits, non-str keys and lone surrogates. Data with any of those takes ``json.dumps``
    (docs/design/042-result-store.md, "What a stored trial costs").
    """
    fast = _orjson_bytes(data)
    return fast if fast is not None else _dumps(data).encode()


def _dumps(data: Any) -> str:
    """The published files' JSON text, the reference ``_orjson_bytes`` must match byte for byte."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _orjson_bytes(data: Any) -> bytes | None:
    if not _orjson_exact(data):
        return None
    try:
        return orjson.dumps(data)
    except TypeError:  # orjson.JSONEncodeError: a big int, a non-str key, a lone surrogate
        return None


def _orjson_exact(data: Any) -> bool:
    """True when every float in ``data`` is one ``repr`` writes without an exponent (orjson and
    ``json`` agree on those) and every value is a plain JSON type.

    Each container taken from the list is checked with its children in place; only grandchildren
    are queued. A record is wide and shallow (about 540 values in 170 small containers), so the
    walk costs a loop step per value and a queue entry per other level of nesting, not a stack
    pop per value (847 -> 216 calls and about 0.6 -> 0.4 M instructions for a calibrated record).
    """
    todo = [[data]]  # data itself is checked as a child, so a scalar or a subclass is judged too
    for container in todo:  # grows while it is walked: a queue without pops
        for value in container.values() if type(container) is dict else container:
            kind = type(value)
            if kind is str:
                continue
            if kind is dict or kind is list:
                for inner in value.values() if kind is dict else value:
                    kind = type(inner)
                    if kind is str:
                        continue
                    if kind is dict or kind is list:
                        todo.append(inner)
                    elif kind is float:  # NaN and inf fail the range too
                        if not (inner == 0.0 or 1e-4 <= abs(inner) < 1e16):
                            return False
                    elif not (kind is int or kind is bool or inner is None):
                        return False
            elif kind is float:
                if not (value == 0.0 or 1e-4 <= abs(value) < 1e16):
                    return False
            elif not (kind is int or kind is bool or value is None):
                return False
    return True


WALL_TIME_FIELDS = ("duration_s", "provenance.created")
"""Fields allowed to differ between two runs of the same trial."""
