"""``IdentityMemo``: values computed once per live object, keyed by identity.

Banks hand the same frozen objects (worlds, tasks, golden calls) to every trial, so what is derived
from one of them can be derived once. pydantic models holding lists are unhashable, hence the
identity key; the entry holds its object weakly and leaves with it, so nothing outlives the bank
that loaded it and an id is never matched to a newer object. It lives in ``apiflow.world``, the
bottom layer, so the world, the agent and the models share one implementation.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """``get(obj, compute)``: ``compute(obj)`` the first time ``obj`` is seen, the kept value after."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[weakref.ref[Any], V]] = {}

    def get(self, obj: K, compute: Callable[[K], V]) -> V:
        key = id(obj)
        hit = self._items.get(key)
        if hit is not None and hit[0]() is obj:
            return hit[1]
        value = compute(obj)

        def forget(_ref: weakref.ref[Any]) -> None:
            self._items.pop(key, None)

        self._items[key] = (weakref.ref(obj, forget), value)
        return value

    def __contains__(self, key: object) -> bool:
        """Whether an entry is kept for the object whose ``id`` is ``key`` (for tests of its lifetime)."""
        return key in self._items
