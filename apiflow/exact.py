"""Exact encodings of built-in data: equal bytes only for equal values of the same types.

What a content-addressed memo can key by (``apiflow.agent.grades``). A pickler whose
``reducer_override`` refuses everything the C pickler does not write itself takes only exact built-in
data types (``dict``, ``list``, ``tuple``, ``str``, ``int``, ``float``, ``bool``, ``None``, bytes and
sets); a subclass, a numpy scalar or any other object makes the encoding None. Unpickling inverts it
with types exact (``1``, ``1.0`` and ``True``, a list and a tuple, ``0.0`` and ``-0.0`` all differ,
dict order kept), so equal bytes are equal values; written without a memo, equal values are always
equal bytes. Not ``marshal`` (``world.transitions`` keys requests with it): it writes every object with
the buffer protocol as bytes (a numpy float, a bytearray), so values of two types could share bytes.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import threading
from typing import Any


class _ExactPickler(pickle.Pickler):
    """Pickles exact built-in data types only. The C pickler writes those itself without asking
    ``reducer_override``; every other object reaches it and is refused."""

    def reducer_override(self, obj: Any) -> Any:
        raise pickle.PicklingError(f"not an exact built-in value: {type(obj).__name__}")


class _Sink(threading.local):
    """One pickler and its buffer per thread, reused: making them is a tenth of a key's cost.

    The pickler runs in fast mode: no memo, so every object is written in full wherever it sits
    (equal values give equal bytes however they share objects) and no memo is kept or cleared
    (about half the cost of a grid record's pickle); a cycle is refused (ValueError). Each ``dump``
    starts from a cleared buffer (the C pickler also clears its own at the start of each), so one
    that raised leaves nothing behind.
    """

    def __init__(self) -> None:
        self.buffer = io.BytesIO()
        self.pickler = _ExactPickler(self.buffer, 5)
        self.pickler.fast = True

    def dump(self, value: Any) -> bool:
        self.buffer.seek(0)
        self.buffer.truncate()
        try:
            self.pickler.dump(value)
        except (pickle.PicklingError, RecursionError, ValueError):  # ValueError: a cycle
            return False
        return True


_sink = _Sink()


def exact_bytes(value: Any) -> bytes | None:
    """``value``'s pickle if it holds exact built-in data types only, else None."""
    return _sink.buffer.getvalue() if _sink.dump(value) else None


def exact_digest(value: Any) -> bytes | None:
    """The sha256 of ``exact_bytes(value)``, without copying the pickle out of its buffer."""
    if not _sink.dump(value):
        return None
    with _sink.buffer.getbuffer() as view:
        return hashlib.sha256(view).digest()
