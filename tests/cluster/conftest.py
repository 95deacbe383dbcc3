"""Fixtures for the grid-runner tests: a moto S3 server, a private in-process Ray, process helpers."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
from pathlib import Path

import pytest

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


@pytest.fixture(scope="module")
def ray_session():
    """A private in-process Ray (2 CPUs, its own short temp dir), shut down after the module."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="afr-", dir="/tmp")  # unix socket paths must stay short
    ray.init(
        num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, logging_level="ERROR", log_to_driver=False
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        kill_all(pids_mentioning(temp_dir))
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def moto_endpoint():
    """A real moto S3 server on 127.0.0.1 (module scope), with dummy credentials."""
    from moto.server import ThreadedMotoServer

    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_PROFILE")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(AWS_ACCESS_KEY_ID="foo", AWS_SECRET_ACCESS_KEY="foo", AWS_DEFAULT_REGION="us-east-1")
    os.environ.pop("AWS_PROFILE", None)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def s3_out(moto_endpoint):
    """A fresh bucket: ``(url, storage_options)``."""
    import requests
    import s3fs

    requests.post(f"{moto_endpoint}/moto-api/reset", timeout=10)
    s3fs.S3FileSystem.clear_instance_cache()
    options = {"key": "foo", "secret": "foo", "client_kwargs": {"endpoint_url": moto_endpoint}}
    s3fs.S3FileSystem(**options).mkdir("grid")
    return "s3://grid/out", options
