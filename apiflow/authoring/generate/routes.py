"""A route book: routes and their ordered rule tables, grown step by step.

Subtasks of one world share route templates (``/v3/hives/{hive_id}/frames``); each step
adds rules keyed on its own ids, placed before the route's fallback, so a later step
never changes how an earlier step's requests are answered.
"""

from __future__ import annotations

import copy
from typing import Any


def rule(
    rule_id: str,
    when: list[dict[str, Any]],
    status: int,
    body: Any,
    *,
    do: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One rule as data."""
    respond: dict[str, Any] = {"status": status, "body": body}
    if headers:
        respond["headers"] = headers
    out: dict[str, Any] = {"id": rule_id, "when": when}
    if do:
        out["do"] = do
    out["respond"] = respond
    return out


def eq(at: str, value: Any) -> dict[str, Any]:
    """Condition ``at == value``."""
    return {"at": at, "eq": value}


def absent(at: str) -> dict[str, Any]:
    """Condition: the feature is missing."""
    return {"at": at, "present": False}


def not_(cond: dict[str, Any]) -> dict[str, Any]:
    """Negated condition."""
    return {"not": cond}


def any_(*conds: dict[str, Any]) -> dict[str, Any]:
    """Disjunction."""
    return {"any": list(conds)}


def register(key: str) -> dict[str, Any]:
    """Effect: mark ``reg.<key>`` — the step's output now exists on the server."""
    return {"set": f"reg.{key}", "value": True}


class RouteBook:
    """Routes in declaration order, each with step rules followed by one fallback."""

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str], dict[str, Any]] = {}

    def snapshot(self) -> dict[tuple[str, str], dict[str, Any]]:
        """A deep copy to roll a rejected step back."""
        return copy.deepcopy(self._routes)

    def restore(self, snap: dict[tuple[str, str], dict[str, Any]]) -> None:
        """Roll back to ``snap``."""
        self._routes = copy.deepcopy(snap)

    def has(self, method: str, path: str) -> bool:
        """Whether the route exists."""
        return (method, path) in self._routes

    def add(
        self,
        method: str,
        path: str,
        summary: str,
        rules: list[dict[str, Any]],
        *,
        scopes: list[str] | None = None,
        bearer: bool = True,
        deprecated: dict[str, str] | None = None,
        fallback: dict[str, Any] | None = None,
    ) -> None:
        """Add ``rules`` to a route (created on first use with summary, auth and fallback)."""
        key = (method, path)
        route = self._routes.get(key)
        if route is None:
            route = {"method": method, "path": path, "summary": summary}
            if bearer:
                route["auth"] = {"scopes": list(scopes or [])}
            if deprecated:
                route["deprecated"] = deprecated
            route["rules"] = []
            route["_fallback"] = [fallback] if fallback else []
            self._routes[key] = route
        route["rules"].extend(rules)

    def routes(self) -> list[dict[str, Any]]:
        """Route dicts in the WorldDef shape (fallbacks last), sorted for a tidy spec."""
        out = []
        for key in sorted(self._routes, key=lambda k: (k[1], k[0])):
            route = dict(self._routes[key])
            route["rules"] = list(route["rules"]) + list(route.pop("_fallback"))
            out.append(route)
        return out
