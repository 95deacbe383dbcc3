"""The Ray session of one driver run: connect to a cluster, or start (and later stop) a private local one."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from apiflow.errors import UsageError


class Ray:
    """Connect to a cluster, or start (and later stop) a private local one.

    ``APIFLOW_RAY_TEMP_DIR`` names the private Ray's temp dir (tests use it to find and stop
    exactly the processes they started); by default a fresh ``/tmp/apiflow-ray-*``.

    The private Ray is kept private: it listens on loopback only (``_loopback_only``) and dies
    with this process, even a SIGKILLed one (``_start_watchdog``).
    """

    def __init__(self, address: str | None) -> None:
        import ray

        self.ray = ray
        self.started_here = False
        self.temp_dir: str | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        if ray.is_initialized():
            return  # the caller (a test, a notebook) already holds a Ray session
        if address is None and not os.environ.get("RAY_ADDRESS"):
            temp_dir = os.environ.get("APIFLOW_RAY_TEMP_DIR") or tempfile.mkdtemp(prefix="apiflow-ray-")
            self.temp_dir = None if os.environ.get("APIFLOW_RAY_TEMP_DIR") else temp_dir
            with _loopback_only():
                ray.init(
                    num_cpus=os.cpu_count() or 2,
                    include_dashboard=False,
                    _temp_dir=temp_dir,
                    _node_ip_address="127.0.0.1",
                    logging_level=logging.ERROR,
                    log_to_driver=False,
                )
            self.started_here = True
            self._watchdog = _start_watchdog(ray, temp_dir, remove=self.temp_dir is not None)
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
            if self._watchdog is not None:  # after the shutdown: a driver killed during it is still covered
                self._watchdog.kill()
                self._watchdog.wait()
            if self.temp_dir:  # ours alone: logs of a private local Ray are not kept
                shutil.rmtree(self.temp_dir, ignore_errors=True)


@contextlib.contextmanager
def _loopback_only() -> Iterator[None]:
    """Make the Ray started inside bind 127.0.0.1 only: node IP and every listener.

    ``_node_ip_address="127.0.0.1"`` alone is not enough: on Linux ``ray.init`` replaces a loopback
    node IP by the machine's address (``services.resolve_ip_for_localhost``), and the GCS, raylet,
    workers and agents then listen on all interfaces. It keeps loopback when
    ``ray_constants.ENABLE_RAY_CLUSTER`` is false (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read at
    ``import ray``); with a loopback node IP every Ray process binds 127.0.0.1 (Ray 2.60, pinned;
    tests/cluster/test_private_ray.py checks every listening socket). Both are set for this
    ``ray.init`` only; the processes it starts inherit the env var.
    """
    from ray._private import ray_constants

    before = ray_constants.ENABLE_RAY_CLUSTER, os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    ray_constants.ENABLE_RAY_CLUSTER = False
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before[0]
        if before[1] is None:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        else:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = before[1]


# The watchdog (stdlib only, ~10 MB): wait until the driver, its parent, is gone; then SIGKILL every
# process that has a file under the session dir open for writing (each Ray process writes its logs
# there: GCS, raylet, agents, workers) until none is left (<= 10 s), and remove the temp dir if the
# driver made it. Ray's own fate-sharing (PR_SET_PDEATHSIG) covers only the processes the driver
# started itself; the raylet's agents outlived a SIGKILLed driver by minutes. Not by environment or
# command line: Ray's processes retitle themselves over both. Not by a reader (`tail -f` of a log).
_WATCHDOG = """
import os, shutil, signal, sys, time
driver, session, temp_dir = int(sys.argv[1]), sys.argv[2] + "/", sys.argv[3]
while os.getppid() == driver:
    time.sleep(0.2)
def writes_there(pid):
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(session):
                with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                    flags = int(info.read().split("flags:")[1].split()[0], 8)
                if flags & os.O_ACCMODE != os.O_RDONLY:
                    return True
    except (OSError, IndexError, ValueError):
        pass
    return False
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid() and writes_there(p)]
    if not pids:
        break
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.1)
if temp_dir:
    shutil.rmtree(temp_dir, ignore_errors=True)
"""


def _start_watchdog(ray: Any, temp_dir: str, remove: bool) -> subprocess.Popen[bytes] | None:
    """Start the private Ray's watchdog (``_WATCHDOG``) as a child of this driver; Linux only (/proc).

    The session dir is Ray's (``<temp dir>/session_<time>_<driver pid>``, through its private node
    object, Ray being pinned): one Ray session's alone even in a shared temp dir.
    """
    if not sys.platform.startswith("linux"):
        return None
    node = ray._private.worker._global_node
    session = os.path.realpath(node.get_session_dir_path() if node is not None else temp_dir)
    return subprocess.Popen(
        [sys.executable, "-I", "-c", _WATCHDOG, str(os.getpid()), session, temp_dir if remove else ""],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C or a kill of the driver's process group leaves it to do its work
    )  # fmt: skip


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
