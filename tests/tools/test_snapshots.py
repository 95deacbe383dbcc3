"""With ``snapshot_calls`` the toolbox keeps its own exact encoding of each call, taken when the call
runs (the grade key of a replaying run: apiflow.agent.replay)."""

from __future__ import annotations

import pickle
from typing import Any

from apiflow.tools import Toolbox, Workspace

from .fakes import FakeWorld


def test_a_call_is_snapshotted_when_it_runs(workspace: Workspace, world: FakeWorld) -> None:
    toolbox = Toolbox(workspace, world.send, snapshot_calls=True)
    arguments: dict[str, Any] = {"query": "orders"}
    toolbox.call("search", arguments)
    arguments["query"] = "something else"  # what a model might do to its own object afterwards
    arguments["extra"] = [1, 2]
    assert toolbox.snapshots is not None and len(toolbox.snapshots) == 1
    snapshot = toolbox.snapshots[0]
    assert snapshot is not None and pickle.loads(snapshot) == ("search", {"query": "orders"})


def test_a_call_with_no_exact_encoding_is_marked(workspace: Workspace, world: FakeWorld) -> None:
    class Text(str):
        pass

    toolbox = Toolbox(workspace, world.send, snapshot_calls=True)
    toolbox.call("search", {"query": Text("orders")})
    assert toolbox.snapshots == [None]


def test_without_snapshots_nothing_is_kept(toolbox: Toolbox) -> None:
    toolbox.call("search", {"query": "orders"})
    assert toolbox.snapshots is None and len(toolbox.calls) == 1
