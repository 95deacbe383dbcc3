"""The preflight asks every node of a multi-node Ray whether its actors will find the grid's keys.

Two local nodes, as two machines would be: the head started without the key, the worker node's
``ray start`` given it (as infra/ray-cluster.yaml's start commands do from the keys file). Only key
names come back, never a value.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from clusterkit import kill_all, pids_mentioning

from cluster.preflight import NodeKeys, node_keys
from cluster.spec import load_grid

ROOT = Path(__file__).resolve().parents[2]
FAKE_KEY = "sk-node-only-7f3a9c1e5b2d4f60"

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture
def two_nodes(monkeypatch):
    """A head without ``OPENAI_API_KEY`` and a worker node with it; the connected ``ray`` module and the
    worker node's id."""
    import ray
    import ray._private.utils
    from ray.cluster_utils import Cluster

    from cluster.session import _loopback_only

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    # cluster_utils records its address in /tmp/ray for `address="auto"`: not from a test on a shared machine.
    monkeypatch.setattr(ray._private.utils, "write_ray_address", lambda *args, **kwargs: None)
    temp_dir = tempfile.mkdtemp(prefix="afk-", dir="/tmp")  # unix socket paths must stay short
    node = {"node_ip_address": "127.0.0.1", "temp_dir": temp_dir, "include_dashboard": False}
    cluster = None
    try:
        with _loopback_only():
            cluster = Cluster(initialize_head=True, head_node_args={**node, "num_cpus": 1})
            worker = cluster.add_node(**node, num_cpus=1, env_vars={"OPENAI_API_KEY": FAKE_KEY})
            ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        yield ray, worker.node_id
    finally:
        ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
        kill_all(pids_mentioning(temp_dir))
        shutil.rmtree(temp_dir, ignore_errors=True)


def _spec(tmp_path: Path, **params):
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        f"name: keys\nbank: {ROOT / 'bank' / 'sample'}\nout: {tmp_path / 'out'}\npreflight: env\n"
        f"models:\n  - model: openai/gpt-5-mini\n    params: {params or {}}\n  - model: apiflow/oracle\n"
    )
    return load_grid(grid)


def test_each_node_says_by_name_whether_its_actors_see_the_key(two_nodes, tmp_path):
    ray, worker_id = two_nodes
    nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
    assert len(nodes) == 2 and worker_id in nodes
    (head_id,) = set(nodes) - {worker_id}
    found = node_keys(ray, _spec(tmp_path))
    assert len(found.checked) == 2 and found.unanswered == ()
    # One line, for the head only: the node whose `ray start` had no key.
    assert found.missing == (
        f"node 127.0.0.1 ({head_id[:8]}): openai/gpt-5-mini: no API key: set OPENAI_API_KEY "
        "(or the model's params.api_key)",
    )
    assert FAKE_KEY not in repr(found)
    # A key in the model's params travels with the spec: no node needs one of its own.
    assert node_keys(ray, _spec(tmp_path, api_key="sk-in-params-0123456789")) == NodeKeys()
