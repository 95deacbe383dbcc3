"""The Ray session of one driver run: connect to a cluster, or start (and later stop) a private local one."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
from typing import Any

from apiflow.errors import UsageError


class Ray:
    """Connect to a cluster, or start (and later stop) a private local one.

    ``APIFLOW_RAY_TEMP_DIR`` names the private Ray's temp dir (tests use it to find and stop
    exactly the processes they started); by default a fresh ``/tmp/apiflow-ray-*``.
    """

    def __init__(self, address: str | None) -> None:
        import ray

        self.ray = ray
        self.started_here = False
        self.temp_dir: str | None = None
        if ray.is_initialized():
            return  # the caller (a test, a notebook) already holds a Ray session
        if address is None and not os.environ.get("RAY_ADDRESS"):
            temp_dir = os.environ.get("APIFLOW_RAY_TEMP_DIR") or tempfile.mkdtemp(prefix="apiflow-ray-")
            self.temp_dir = None if os.environ.get("APIFLOW_RAY_TEMP_DIR") else temp_dir
            ray.init(
                num_cpus=os.cpu_count() or 2,
                include_dashboard=False,
                _temp_dir=temp_dir,
                # Loopback only: by default Ray binds the machine's interface address.
                _node_ip_address="127.0.0.1",
                logging_level=logging.ERROR,
                log_to_driver=False,
            )
            self.started_here = True
        else:
            target = address or os.environ.get("RAY_ADDRESS")
            refused = UsageError(
                f"no running Ray cluster at {f'--address {address}' if address else f'RAY_ADDRESS={target}'}: "
                "start one (ray start --head) or leave out --address for a private local Ray"
            )
            if target and not _listening(target):
                raise refused  # ray.init would wait on a dead address for minutes
            try:
                ray.init(address=target, logging_level=logging.ERROR)
            except ConnectionError:
                raise refused from None

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        if self.started_here:
            _stop_monitor(self.ray)
            self.ray.shutdown()
            if self.temp_dir:  # ours alone: logs of a private local Ray are not kept
                shutil.rmtree(self.temp_dir, ignore_errors=True)


def _listening(address: str, timeout_s: float = 5.0) -> bool:
    """Whether anything accepts a connection at a ``host:port`` or ``ray://host:port`` address
    (True for any other form, such as ``auto``, which Ray resolves itself)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host or "/" in host:
        return True
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def _stop_monitor(ray: Any) -> None:
    """Stop the private Ray's autoscaler monitor by its pid, before ``ray.shutdown``.

    Ray's shutdown stops the GCS before the monitor, whose SIGTERM handler then reports its own end
    to the GCS just stopped and hangs until Ray kills it a second later: most of the time a private
    Ray took to stop (measured per process kind: docs/results/issue11-round7.md). A private local Ray never autoscales, and the
    monitor holds nothing of ours. Reached through Ray's private node object (Ray is pinned); if
    that is not there, the shutdown is Ray's own, a second slower.
    """
    try:
        node = ray._private.worker._global_node
        if node is not None:
            node.kill_monitor(check_alive=False)
    except Exception:  # noqa: BLE001 - another Ray's internals: shut down as Ray does
        logging.getLogger(__name__).debug("could not stop the autoscaler monitor first", exc_info=True)
