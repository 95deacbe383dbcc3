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
        if type(node) is dict:  # the usual case, without the isinstance call
            node = node.get(part, MISSING)
            if node is MISSING:
                return MISSING
        elif isinstance(node, dict):
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
    """A copy of ``tree`` with ``value`` at ``parts`` (missing dicts are created).

    A loop rather than a recursion (one call per update, not one per level); each level is copied
    as the recursive form copied it, and an index out of a list's range raises the same IndexError.
    """
    if not parts:
        return value
    root: Any = None
    parent: Any = None
    slot: Any = None
    node = tree
    for head in parts:
        if type(node) is dict:  # the usual level, without the two isinstance calls
            copy: Any = {**node}
            key: Any = head
            child = copy.get(head)  # None when absent: made a {} on the next level, as {} would be
        elif isinstance(node, list) and head.lstrip("-").isdigit():
            copy = list(node)
            key = int(head)
            child = copy[key]
        else:
            copy = dict(node) if isinstance(node, dict) else {}
            key = head
            child = copy.get(head)
        if parent is None:
            root = copy
        else:
            parent[slot] = copy
        parent, slot, node = copy, key, child
    parent[slot] = value
    return root
