"""Process and port helpers for the grid-runner tests (a uniquely named module: no conftest clash)."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def children(pid: int) -> list[int]:
    """All descendants of ``pid`` (from /proc; no psutil)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in parents.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def cmdline(pid: int) -> str:
    """A process's command line ("" once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def pids_mentioning(text: str) -> list[int]:
    """Processes whose command line contains ``text`` (e.g. a private Ray temp dir)."""
    return [
        int(p)
        for p in os.listdir("/proc")
        if p.isdigit() and int(p) != os.getpid() and text in cmdline(int(p))
    ]


def kill_all(pids: list[int]) -> None:
    """SIGKILL exactly these processes (our own; never by name)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_ray_of(temp_dir: str, timeout_s: float = 20.0) -> None:
    """SIGKILL a private Ray (every process naming ``temp_dir``) with its workers, and wait until
    they are gone.

    Ray's workers retitle themselves (``ray::TrialWorker…``), so their command lines no longer
    name the temp dir: they are found as descendants of the processes that do, and by their
    environment (a worker whose raylet already died is nobody's descendant; it inherited the
    environment the driver was started with, which names the temp dir). An orphaned worker
    finishes its batch and writes it: a rerun started meanwhile would store those trials twice.
    """
    named = pids_mentioning(temp_dir) + _pids_with_env(temp_dir)
    doomed = sorted({*named, *(c for pid in named for c in children(pid))})
    kill_all(doomed)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = [pid for pid in doomed if _running(pid)]
        if not alive:
            return
        time.sleep(0.05)
    raise AssertionError(f"Ray processes {alive} outlived SIGKILL for {timeout_s:.0f} s")


def _pids_with_env(text: str) -> list[int]:
    """Processes whose environment contains ``text`` (ours only: /proc hides others' environments)."""
    needle = text.encode()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid() and needle in _environ(int(p))]


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, or not ours
        return b""


def _running(pid: int) -> bool:
    # A zombie has died (its parent has not reaped it yet): it writes nothing any more.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
