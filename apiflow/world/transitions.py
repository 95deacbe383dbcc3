"""Replayed transitions: a trial that sends what an earlier trial of the same world sent, in the
same order, gets the earlier answers back instead of the world working them out again.

A world session is a pure function of its definition, its seed, its initial state and the
requests sent so far (no clock, no global random: docs/design/020), and the canary codec in front
of it is a pure function of the task's literals and the canary seed. So the answer to a request
after a given history is fixed, and a trie of histories can hold it: each edge is a request,
and holds the response the agent saw and the world state after it. In a grid, the trials of one
(task, epoch) share every seed (they are derived from the grid seed, the task and the epoch, never
the model), so the models of a leaderboard, the offline ones above all, send mostly the same first
requests to identical worlds (docs/design/030, "Replayed world answers (round five)").

What is shared between trials: response objects (frozen; their bodies are never mutated: the
workspace already keeps world responses uncopied, and worlds already hand one constant body to
every trial) and state dicts (persistent: an update copies along its path, and dispatch never
mutates state). A request that cannot be keyed exactly, or a send that raises, takes the trial
off the trie for the rest of its requests: from there on it is served by the world alone.

The memo is bounded by edges in all; when full, the root used least recently leaves whole. One
memo serves one run of built-in offline models (``apiflow.agent.replay``).
"""

from __future__ import annotations

import marshal
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Final

from apiflow.world.http import HttpRequest, HttpResponse

Send = Callable[[HttpRequest], HttpResponse]
Node = dict[bytes, tuple[HttpResponse, Any, dict[Any, Any]]]
"""Request key -> (response, world state after it, the node of the longer history)."""

MAX_EDGES: Final = 40_000
"""About 2.6 KB an edge at bank/v1's sizes (an actor's RSS grew 140 MB for 54k edges): ~100 MB at most.
The 44,365-trial grid makes ~7k edges an epoch in each of its two actors (each task's trials on one actor:
docs/design/040, "Task homes"), and an epoch's roots never come back in the next one (the seeds differ), so
this holds the epoch being played with room over."""


MAX_ROOTS: Final = 8_192
"""Roots held at most (a grid makes one per task and epoch)."""


def request_key(request: HttpRequest) -> bytes | None:
    """A key equal for two requests only when they are the same values of the same types; None if
    they cannot be keyed so.

    ``marshal`` (format 2: no back-references, so equal values always give equal bytes) writes
    exact types and values in order: ``1``, ``1.0``, ``True``, ``"1"``, a list and a tuple, ``0.0``
    and ``-0.0``, a text body and the JSON body it spells are all different keys, where ``==``
    would call some of them equal; it refuses other types (subclasses included), and the request
    then goes unmemoised. One C call, about a microsecond. One exception: an object with the buffer
    protocol is written as bytes (a bytearray, or a numpy float, the float subclass that has one).
    No such value reaches a request but a numpy float (the toolbox's scan refuses every bytes-like
    value), and one numpy float's bytes are only ever another's equal value, so no two different
    requests share a key. (``apiflow.agent.grades`` keys values no scan has seen, and uses an
    exact pickle instead.)
    """
    try:
        return marshal.dumps((request.method, request.url, request.headers, request.body), 2)
    except ValueError:
        return None


class _Root:
    """One history trie, and the objects whose identities key it (held so the ids stay theirs)."""

    __slots__ = ("keep", "node", "edges", "evicted")

    def __init__(self, keep: tuple[Any, ...]) -> None:
        self.keep = keep
        self.node: Node = {}
        self.edges = 0
        self.evicted = False


class TransitionMemo:
    """Tries of world histories, one a root, bounded by ``max_edges`` edges in all."""

    def __init__(self, max_edges: int = MAX_EDGES) -> None:
        self.max_edges = max_edges
        self._roots: OrderedDict[Hashable, _Root] = OrderedDict()
        self.edges = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._roots)

    def stats(self) -> dict[str, int]:
        """Answers replayed (``hits``) and worked out by the world (``misses``), edges and roots held."""
        return {"hits": self.hits, "misses": self.misses, "edges": self.edges, "roots": len(self._roots)}

    def clear(self) -> None:
        for root in self._roots.values():
            root.evicted = True
        self._roots.clear()
        self.edges = self.hits = self.misses = 0

    def root(self, key: Hashable, keep: tuple[Any, ...]) -> _Root:
        """The trie of ``key``; ``keep`` are the objects whose ``id``s are in ``key``."""
        root = self._roots.get(key)
        if root is not None:
            if all(a is b for a, b in zip(root.keep, keep, strict=True)):
                self._roots.move_to_end(key)
                return root
            # Other objects at the same ids (the key's own objects are held, so only a caller
            # building keys of its own gets here): the old trie is not theirs.
            del self._roots[key]
            root.evicted = True
            self.edges -= root.edges
        root = _Root(keep)
        self._roots[key] = root
        if len(self._roots) > MAX_ROOTS:  # roots without edges (trials that sent nothing) add up too
            self._evict_oldest()
        return root

    def _evict_oldest(self) -> _Root:
        _, oldest = self._roots.popitem(last=False)
        oldest.evicted = True
        self.edges -= oldest.edges
        return oldest

    def add(self, root: _Root, node: Node, key: bytes, edge: tuple[HttpResponse, Any, Node]) -> bool:
        """File ``edge`` under ``node``; False when the root has left (the trial goes off the trie)."""
        if root.evicted:
            return False
        node[key] = edge
        root.edges += 1
        self.edges += 1
        while self.edges > self.max_edges and len(self._roots) > 1:
            if self._evict_oldest() is root:
                return False
        return True

    def send(self, session: Any, send: Send, root: _Root) -> Send:
        """``send`` (which advances ``session``) answered from the trie where it can be."""
        return _ReplayingSend(self, session, send, root)


class _ReplayingSend:
    """One trial's transport: answers from its place in the trie, else from the world."""

    __slots__ = ("_memo", "_session", "_send", "_root", "_node")

    def __init__(self, memo: TransitionMemo, session: Any, send: Send, root: _Root) -> None:
        self._memo, self._session, self._send, self._root = memo, session, send, root
        self._node: Node | None = root.node

    def __call__(self, request: HttpRequest) -> HttpResponse:
        node = self._node
        key = None
        if node is not None:
            key = request_key(request)
            if key is not None:
                edge = node.get(key)
                if edge is not None:
                    session = self._session
                    session.state = edge[1]
                    session.requests_served += 1  # what the world's send does besides answering
                    self._node = edge[2]
                    self._memo.hits += 1
                    return edge[0]
        try:
            response = self._send(request)
        except BaseException:
            self._node = None  # the session may have moved in a way no edge records
            raise
        if key is None:
            self._node = None
            return response
        self._memo.misses += 1
        child: Node = {}
        assert node is not None
        self._node = (
            child if self._memo.add(self._root, node, key, (response, self._session.state, child)) else None
        )
        return response
