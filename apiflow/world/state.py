"""Persistent (copy-on-write) access to world state.

World state is a JSON-like tree of dicts and lists. Updates copy only the
containers along the changed path, so an earlier state object is never mutated
and a handler really is ``(state, request) -> (state, response)``.
"""

from __future__ import annotations

from typing import Any

MISSING: Any = object()
"""Sentinel for "no value at this path" (distinct from a stored ``None``)."""


def split_path(path: str) -> list[str]:
    """``"a.b.0"`` -> ``["a", "b", "0"]``; an empty path addresses the root."""
    return [part for part in path.split(".") if part] if path else []


def get_in(tree: Any, parts: list[str]) -> Any:
    """The value at ``parts`` or ``MISSING``; list items are addressed by index."""
    node = tree
    for part in parts:
        if isinstance(node, dict):
            if part not in node:
                return MISSING
            node = node[part]
        elif isinstance(node, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(node) <= index < len(node):
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node


def assoc_in(tree: Any, parts: list[str], value: Any) -> Any:
    """A copy of ``tree`` with ``value`` at ``parts`` (missing dicts are created)."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if isinstance(tree, list) and head.lstrip("-").isdigit():
        copy_list = list(tree)
        copy_list[int(head)] = assoc_in(copy_list[int(head)], rest, value)
        return copy_list
    copy = dict(tree) if isinstance(tree, dict) else {}
    copy[head] = assoc_in(copy.get(head, {}), rest, value)
    return copy
