"""What a rule can see of a request: its parsed features, looked up by a dotted name."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from apiflow.world.jsontext import loads
from apiflow.world.state import MISSING, get_in, split_path


class ParsedUrl(NamedTuple):
    """Host part (``""`` for relative URLs), path and last-value-wins query."""

    netloc: str
    path: str
    query: dict[str, str]
    query_string: str


def parse_url(url: str) -> ParsedUrl:
    """Split a relative or absolute URL the way a server sees it (the query dict is the caller's own)."""
    netloc, path, query_string = split_url(url)
    return ParsedUrl(netloc, path, parse_query(query_string) if query_string else {}, query_string)


def split_url(url: str) -> tuple[str, str, str]:
    """``parse_url``'s netloc, path and query string, without the query's dict (dispatch makes it
    only for a request that reaches a route)."""
    return _split(url) if len(url) <= _SPLIT_MEMO_URL else _split.__wrapped__(url)


_SPLIT_MEMO_URL = 2048


@functools.lru_cache(maxsize=4096)
def _split(url: str) -> tuple[str, str, str]:
    # A pure function of the text; kept for the URLs a grid sends again (short ones only).
    parts = urlsplit(url)
    path = parts.path or "/"
    if not path.startswith("/"):
        path = "/" + path
    return parts.netloc, path, parts.query


def parse_query(query: str) -> dict[str, str]:
    """Last-value-wins query parameters, blank values kept (``parse_qsl`` semantics)."""
    if "%" in query or "+" in query or ";" in query:
        return dict(parse_qsl(query, keep_blank_values=True))
    # Nothing to unquote: split as parse_qsl does, without its per-field decoding work.
    return dict(field.partition("=")[::2] for field in query.split("&") if field)


def parse_body(body: Any) -> tuple[str, Any]:
    """Classify a request body: JSON object/value, form-urlencoded text, other text, or none.

    A string that parses as JSON counts as JSON (clients often send ``json.dumps`` text);
    ``a=b&c=d`` counts as a form.
    """
    if body is None or body == "":
        return "none", None
    if not isinstance(body, str):
        return "json", body
    try:
        return "json", loads(body)
    except (ValueError, RecursionError):  # a body nested past the recursion limit is text, not a crash
        pass
    if "=" in body and " " not in body.strip():
        return "form", dict(parse_qsl(body.strip(), keep_blank_values=True))
    return "text", body


class Features(NamedTuple):
    """Everything conditions and templates may read about one request.

    A NamedTuple rather than a frozen dataclass: as immutable, and built once or twice per
    request for a fraction of the cost (a frozen dataclass sets each field through ``object.__setattr__``).
    """

    method: str
    path_params: dict[str, str]
    query: dict[str, str]
    headers: dict[str, str]
    body_kind: str
    body: Any
    auth: dict[str, Any]
    state: dict[str, Any]
    route_calls: int

    def lookup(self, name: str) -> Any:
        """The feature called ``name`` (e.g. ``body.duration.unit``) or ``MISSING``."""
        return self.at(address_of(name))

    def at(self, address: Address) -> Any:
        """The feature at a parsed ``address`` (see ``address_of``) or ``MISSING``."""
        name, head, rest, parts = address
        if head == "method":
            return self.method
        if head == "path":
            return get_in(self.path_params, parts)
        if head == "query":
            return get_in(self.query, parts)
        if head == "header":
            return self.headers.get(rest.lower(), MISSING)
        if head == "body":
            return self.body if not parts else get_in(self.body, parts)
        if head == "body_kind":
            return self.body_kind
        if head == "auth":
            return get_in(self.auth, parts)
        if head == "state":
            return get_in(self.state, parts)
        if head == "route" and rest == "calls":
            return self.route_calls
        raise ValueError(f"unknown request feature {name!r}")

    def with_state(self, state: dict[str, Any]) -> Features:
        """The same request seen against a new state (after an effect)."""
        return Features(
            self.method, self.path_params, self.query, self.headers, self.body_kind, self.body,
            self.auth, state, self.route_calls,
        )


class Address(NamedTuple):
    """A feature name split once, e.g. ``body.a.b`` -> head ``body``, rest ``a.b``, parts ``[a, b]``."""

    name: str
    head: str
    rest: str
    parts: list[str]


def address_of(name: str) -> Address:
    """Split a feature name (``state.plan.status``) into its ``Address``."""
    head, _, rest = name.partition(".")
    return Address(name, head, rest, split_path(rest))


Getter = Callable[[Features], Any]


def getter_of(address: Address) -> Getter:
    """A reader of the feature at ``address``: ``Features.at`` with its branch on the head taken once.

    Conditions and templates read features on every request; choosing the branch when the world
    is compiled leaves one call per read instead of ``at``'s chain of comparisons. The value read
    is ``features.at(address)``'s, and an unknown feature still raises when it is read.
    """
    head, rest, parts = address.head, address.rest, address.parts
    if head == "method":
        return _read_method
    if head == "path":
        return lambda features: get_in(features.path_params, parts)
    if head == "query":
        return lambda features: get_in(features.query, parts)
    if head == "header":
        name = rest.lower()
        return lambda features: features.headers.get(name, MISSING)
    if head == "body":
        if not parts:
            return _read_body
        return lambda features: get_in(features.body, parts)
    if head == "body_kind":
        return _read_body_kind
    if head == "auth":
        return lambda features: get_in(features.auth, parts)
    if head == "state":
        if len(parts) == 1:
            (key,) = parts
            return lambda features: _state_key(features.state, key)
        return lambda features: get_in(features.state, parts)
    if head == "route" and rest == "calls":
        return _read_route_calls
    return address_error(address)


def address_error(address: Address) -> Getter:
    """A reader that raises what ``Features.at`` raises for an unknown feature."""

    def unknown(features: Features) -> Any:
        return features.at(address)

    return unknown


def _read_method(features: Features) -> Any:
    return features.method


def _read_body(features: Features) -> Any:
    return features.body


def _read_body_kind(features: Features) -> Any:
    return features.body_kind


def _read_route_calls(features: Features) -> Any:
    return features.route_calls


def _state_key(state: Any, key: str) -> Any:
    # get_in(state, [key]) for the usual dict state, without the loop.
    if type(state) is dict:
        return state.get(key, MISSING)
    return get_in(state, [key])
