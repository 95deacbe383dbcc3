"""The Ray session of one driver run: connect to a cluster, or start (and later stop) a private local one."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Any


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
            ray.init(address=address or os.environ.get("RAY_ADDRESS"), logging_level=logging.ERROR)

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        if self.started_here:
            _stop_monitor(self.ray)
            self.ray.shutdown()
            if self.temp_dir:  # ours alone: logs of a private local Ray are not kept
                shutil.rmtree(self.temp_dir, ignore_errors=True)


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
