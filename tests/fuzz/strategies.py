"""Hypothesis strategies for what a model may send: JSON-ish values, odd unicode, tool calls.

Every fuzz test runs derandomized (the same examples on every machine and run) with an explicit
example count and no deadline; ``APIFLOW_FUZZ_SCALE`` multiplies the counts for a longer local
run (``APIFLOW_FUZZ_SCALE=20 pytest tests/fuzz``), the default keeps CI fast.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from apiflow.bank import Bank, load_bank
from apiflow.tools.contract import TOOL_FUNCTIONS

SCALE = max(1, int(os.environ.get("APIFLOW_FUZZ_SCALE", "1")))


@functools.cache
def sample_bank() -> Bank:
    """``bank/sample``, loaded once for the fuzz tests that play it (loaded on first use, not at import)."""
    return load_bank("bank/sample")


TOOL_NAMES = [f.__name__ for f in TOOL_FUNCTIONS]
KINDS = ["request", "response", "variable", "spec", "handle"]
PATHS = [
    "/v3/auth/token",
    "/v1/auth/token",
    "/v3/blocks",
    "/v3/blocks/b-1/bins",
    "/v3/manifests",
    "/v3/manifests/m-1/commit",
    "/v3/dispatches/summary",
    "/openapi.json",
    "http://localhost:9001/v3/blocks?limit=2",
    "",
    "//",
    "http://[::1",
    "/%zz/%00?%%",
]


def fuzz_settings(examples: int) -> settings:
    """Reproducible settings: derandomized, no database, no deadline, ``examples`` × scale."""
    return settings(
        max_examples=examples * SCALE,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# Text a model can emit: any code point, lone surrogates and NULs included, plus the usual suspects.
SPECIAL = st.sampled_from(
    ["\x00", "\ud800", "\udfff", "\u202e", "\u200f", "\ufeff", "\U0001f600", "\r\n", "é"]
)
odd_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=24),
    st.lists(SPECIAL, max_size=6).map("".join),
    st.text(max_size=12),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    odd_text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4),
    max_leaves=12,
)


def _deep(depth: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


class _Opaque:
    """An object no JSON encoder knows; its repr would raise."""

    def __repr__(self) -> str:
        raise RuntimeError("repr of an opaque object")


def _cyclic() -> dict[str, Any]:
    loop: dict[str, Any] = {"kind": "request"}
    loop["parent"] = loop
    return loop


# Text that breaks naive parsers: nesting past the recursion limit, unclosed, NUL, bad escapes.
HOSTILE_TEXT = ["[" * 3000, '{"a":' * 3000, "[" * 3000 + "]" * 3000, '"\\ud800"', "\x00", "{" * 50, "%00%ff"]


# What a buggy adapter or a hostile model could put where JSON belongs.
not_json = st.one_of(
    st.just(float("nan")),
    st.just(float("inf")),
    st.just(10**5000),
    st.just({1: "int key"}),
    st.just({"set": {1, 2}}),
    st.just(b"bytes"),
    st.builds(_Opaque),
    st.builds(_cyclic),
    st.integers(60, 70).map(_deep),
    st.just(_deep(5000)),
    st.just("x" * 300_000),
)

refs = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(KINDS) | odd_text,
            "id": st.sampled_from(["openapi", "x", "token"]) | odd_text,
        },
        optional={
            "parent": st.fixed_dictionaries({"kind": st.sampled_from(KINDS), "id": odd_text}) | odd_text
        },
    ),
    st.sampled_from(["spec:openapi", "variable:client_id", "request:x", "request:x/response:y", "a:b/" * 70]),
    st.sampled_from(HOSTILE_TEXT),
    odd_text,
    json_values,
)
requests = st.fixed_dictionaries(
    {},
    optional={
        "protocol": st.sampled_from(["rest", "REST", "graphql", "mcp", "soap"]) | json_values,
        "method": st.sampled_from(["GET", "POST", "PUT", "DELETE", "patch", ""]) | json_values,
        "url": st.sampled_from(PATHS) | odd_text,
        "headers": st.dictionaries(
            st.sampled_from(["Authorization", "Content-Type", "Content-Length", "X y", ""]) | odd_text,
            st.sampled_from(["Bearer x", "application/json", "0", " pad "]) | odd_text | json_values,
            max_size=3,
        )
        | json_values,
        "body": json_values | st.just("[" * 3000) | st.just('{"a":' * 3000),
        "query": odd_text,
        "tool": odd_text,
    },
)
_ARGUMENTS = {
    "read": {"entity_ref": refs, "scope": st.sampled_from(["vault", "local", "global"]) | json_values},
    "write": {
        "entity_ref": refs,
        "content": st.fixed_dictionaries({"value": json_values}) | requests | json_values,
        "scope": odd_text | json_values,
    },
    "edit": {"entity_ref": refs, "patch": st.dictionaries(odd_text, json_values, max_size=3) | json_values},
    "search": {"query": odd_text | json_values, "kind": st.sampled_from(KINDS + [""]) | json_values},
    "execute": {"request": requests | json_values, "target": refs, "mode": json_values},
    "clarify": {"question": odd_text | json_values},
    "report_blocked": {"reason": odd_text | json_values},
}


IDS = st.sampled_from(["x", "token", "client_id", "access_token", "openapi"]) | odd_text
_valid_ref = st.one_of(
    st.fixed_dictionaries({"kind": st.sampled_from(["variable", "request", "handle"]), "id": IDS}),
    st.sampled_from(["spec:openapi", "variable:client_id", "request:x", "handle:x", "variable:x"]),
)
# Routes of the sample world (method, path): a request on one reaches body parsing and the rules.
ROUTES = [
    ("POST", "/v3/auth/token"),
    ("POST", "/v1/auth/token"),
    ("GET", "/v3/blocks"),
    ("GET", "/v3/blocks/b-1/bins"),
    ("POST", "/v3/manifests"),
    ("POST", "/v3/manifests/m-1/commit"),
    ("POST", "/v3/dispatches/d-1/expedite"),
]
_valid_request = st.tuples(
    st.sampled_from(ROUTES),
    st.fixed_dictionaries(
        {
            "body": st.sampled_from(HOSTILE_TEXT)
            | json_values
            | st.just("grant_type=client_credentials&client_id=x")
        },
        optional={
            "protocol": st.sampled_from(["rest", "REST", "graphql", "mcp"]),
            "headers": st.dictionaries(
                st.sampled_from(["Authorization", "Content-Type", "X-Odd"]), odd_text, max_size=2
            ),
        },
    ),
).map(lambda pair: {"method": pair[0][0], "url": pair[0][1], **pair[1]})
_SCOPES = st.sampled_from(["vault", "local", "global", "odd"])
_VALID = {
    "read": st.fixed_dictionaries({"entity_ref": _valid_ref}, optional={"scope": _SCOPES | st.none()}),
    "write": st.fixed_dictionaries(
        {"entity_ref": _valid_ref, "content": st.fixed_dictionaries({"value": json_values}) | _valid_request},
        optional={"scope": _SCOPES},
    ),
    "edit": st.fixed_dictionaries(
        {
            "entity_ref": _valid_ref,
            "patch": st.dictionaries(odd_text | st.just("body"), json_values, max_size=3),
        }
    ),
    "search": st.fixed_dictionaries(
        {"query": odd_text | st.sampled_from(["", "req", "token", "{"])},
        optional={"kind": st.sampled_from(KINDS)},
    ),
    "execute": st.one_of(
        st.fixed_dictionaries({"request": _valid_request}),
        st.fixed_dictionaries({"target": st.fixed_dictionaries({"kind": st.just("request"), "id": IDS})}),
    ),
    "clarify": st.fixed_dictionaries({"question": odd_text}),
    "report_blocked": st.fixed_dictionaries({"reason": odd_text}),
}


def schema_shaped(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments with the tool's own parameter names: valid in shape (odd in content), or any subset
    of the parameters with values near and far from valid."""
    return _VALID[name] | st.fixed_dictionaries({}, optional=_ARGUMENTS[name])


def encoded(value: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    """A value JSON-encoded, as providers send arguments, sometimes cut short."""
    import json

    return st.tuples(value, st.booleans()).map(
        lambda pair: (lambda text: text[: len(text) // 2] if pair[1] else text)(json.dumps(pair[0]))
    )


tool_names = st.sampled_from(TOOL_NAMES) | odd_text | json_values
arguments = st.one_of(
    st.sampled_from(TOOL_NAMES).flatmap(schema_shaped),
    st.sampled_from(TOOL_NAMES).flatmap(lambda n: encoded(schema_shaped(n))),
    json_values,
    odd_text,
    not_json,
)
