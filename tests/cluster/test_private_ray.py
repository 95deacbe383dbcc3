"""The private Ray that ``apiflow grid run`` starts for itself stays private (cluster/session.py):
every process of it listens on loopback only, and none outlives its driver, even a SIGKILLed one.

Each test starts the driver, ``cluster.session.Ray(None)`` as ``grid run`` calls it, in a
subprocess of its own with ``TMPDIR`` in a fresh folder of the test's (so the private Ray's temp dir
``apiflow-ray-*`` is made there) and a variable naming that folder in its environment, which every
process of that Ray inherits: that, the driver's descendants and command lines naming the folder
find its processes, never a machine-wide pattern. Whatever is left is SIGKILLed by pid.
"""

from __future__ import annotations

import ipaddress
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from clusterkit import ROOT, children, cmdline, kill_all, pids_mentioning

pytest.importorskip("ray")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

GONE_WITHIN_S = 30.0  # the bound after a driver's SIGKILL (measured: well under 1 s)

DRIVER = """
import os, sys, time
import ray
from cluster.session import Ray

session = Ray(None)
@ray.remote
def pid():
    return os.getpid()
ray.get([pid.remote() for _ in range(2)])  # workers up: they listen too
print("READY", session.temp_dir, flush=True)
if sys.argv[1] == "close":
    watchdog = session._watchdog.pid
    session.close()
    print("CLOSED", watchdog, flush=True)
time.sleep(600)
"""


def test_every_listener_is_loopback_and_all_dies_with_the_driver() -> None:
    with private_ray("kill") as (driver, folder, ray_temp):
        ours = session_pids(driver.pid, folder)
        listeners = listening(ours)
        assert listeners, "no listening socket found: the scan is broken"
        assert {name for name, _ in listeners.values()} >= {"gcs_server", "raylet"}
        wide = {key: (name, addr) for key, (name, addr) in listeners.items() if not loopback(addr)}
        assert not wide, f"listening beyond loopback: {wide}"

        started = time.monotonic()
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        left = wait_gone(ours, folder)
        print(
            f"\nall {len(ours)} processes of the private Ray gone {time.monotonic() - started:.2f} s after SIGKILL"
        )
        assert not left, f"alive {GONE_WITHIN_S:.0f} s after the driver's SIGKILL: {left}"
        assert not os.path.exists(ray_temp), "the killed driver's private temp dir was not removed"


def test_close_stops_the_watchdog_and_leaves_nothing() -> None:
    with private_ray("close") as (driver, folder, ray_temp):
        watchdog = int(read_line(driver, "CLOSED").split()[1])
        left = [pid for pid in session_pids(driver.pid, folder) if pid != driver.pid and running(pid)]
        assert watchdog not in left and not running(watchdog)
        assert not left, {pid: cmdline(pid)[:80] for pid in left}
        assert not os.path.exists(ray_temp)


# --- helpers ----------------------------------------------------------------------------------------

MARK = "APIFLOW_TEST_PRIVATE_RAY"


@contextmanager
def private_ray(mode: str) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """The driver subprocess once its private Ray is up: ``(process, test folder, Ray temp dir)``."""
    folder = tempfile.mkdtemp(prefix="afp-", dir="/tmp")  # unix socket paths under it must stay short
    env = dict(os.environ, TMPDIR=folder, **{MARK: folder})
    for name in ("RAY_ADDRESS", "APIFLOW_RAY_TEMP_DIR"):
        env.pop(name, None)
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, mode], env=env, cwd=ROOT, text=True,
        stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    seen: set[int] = set()
    try:
        ray_temp = read_line(driver, "READY").split()[1]
        assert ray_temp.startswith(folder + "/apiflow-ray-")
        seen.update(session_pids(driver.pid, folder))
        yield driver, folder, ray_temp
    finally:
        driver.kill()
        driver.wait()
        kill_all(sorted(seen | set(session_pids(driver.pid, folder))))
        if driver.stdout:
            driver.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


def read_line(driver: subprocess.Popen[str], prefix: str, timeout_s: float = 120.0) -> str:
    assert driver.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([driver.stdout], [], [], 0.5)
        if ready:
            line = driver.stdout.readline()
            if not line:
                raise AssertionError(f"the driver ended (exit {driver.wait()}) before {prefix!r}")
            if line.startswith(prefix):
                return line.strip()
    raise AssertionError(f"no {prefix!r} from the driver in {timeout_s:.0f} s")


def session_pids(driver: int, folder: str) -> list[int]:
    """The driver, its descendants, and every process naming ``folder`` in its command line or
    environment or holding a file under it open (Ray's processes retitle themselves over their
    command line and environment; each writes logs under its temp dir). Only this user's processes
    show their environment and files."""
    needle = f"{MARK}={folder}".encode()
    found = {driver, *children(driver), *pids_mentioning(folder)}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (
            needle in environ(int(entry)).split(b"\0") or has_open_under(int(entry), folder)
        ):
            found.add(int(entry))
    found.discard(os.getpid())
    return sorted(pid for pid in found if running(pid))


def has_open_under(pid: int, folder: str) -> bool:
    try:
        return any(
            os.readlink(f"/proc/{pid}/fd/{fd}").startswith(folder + "/")
            for fd in os.listdir(f"/proc/{pid}/fd")
        )
    except OSError:
        return False


def wait_gone(pids: list[int], folder: str) -> dict[int, str]:
    """Wait up to GONE_WITHIN_S until neither ``pids`` nor any process naming ``folder`` runs."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while True:
        alive = {pid for pid in pids if running(pid)} | set(session_pids(-1, folder))
        if not alive or time.monotonic() > deadline:
            return {pid: cmdline(pid)[:80] for pid in sorted(alive)}
        time.sleep(0.05)


def listening(pids: list[int]) -> dict[tuple[int, str], tuple[str, str]]:
    """The listening TCP sockets of ``pids``: ``{(pid, inode): (process name, local address)}``."""
    table: dict[str, str] = {}
    for kind in ("tcp", "tcp6"):
        for row in Path(f"/proc/net/{kind}").read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A":  # TCP_LISTEN
                table[fields[9]] = address(fields[1])
    found = {}
    for pid in pids:
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:  # gone meanwhile
            continue
        for link in links:
            inode = link.removeprefix("socket:[").removesuffix("]")
            if link.startswith("socket:[") and inode in table:
                found[(pid, inode)] = (name, table[inode])
    return found


def address(hex_addr: str) -> str:
    """``0100007F:1F90`` (or its 32-digit IPv6 form) -> ``127.0.0.1:8080``; words are host order."""
    ip_hex, port = hex_addr.split(":")
    raw = b"".join(bytes.fromhex(ip_hex[i : i + 8])[::-1] for i in range(0, len(ip_hex), 8))
    return f"{ipaddress.ip_address(raw)}:{int(port, 16)}"


def loopback(addr: str) -> bool:
    ip = ipaddress.ip_address(addr.rsplit(":", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, or not ours
        return b""


def running(pid: int) -> bool:
    """Alive and not a zombie (a zombie has died; its parent has not reaped it yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
