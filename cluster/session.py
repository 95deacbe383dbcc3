"""The Ray session of one driver run: connect to a cluster, or start (and later stop) a private local one."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile


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
            self.ray.shutdown()
            if self.temp_dir:  # ours alone: logs of a private local Ray are not kept
                shutil.rmtree(self.temp_dir, ignore_errors=True)
