"""The chaos suite's machinery: a two-node local Ray cluster, a moto S3 server and the stand-in provider,
each a set of processes this module started and stops by their own process ids.

Nothing here is found by name: every Ray process of ours carries our marker in its environment
(``APIFLOW_CHAOS_CLUSTER=/tmp/rc-<pid>``, inherited from the ``ray start`` that spawned it), most also
mention one of our private temp dirs (``/tmp/rc-<pid>-h`` / ``-n``) on their command line, and the worker
processes are descendants of our raylets. The command line alone misses the head's Ray client server (its
arguments name no temp dir and ``ray start`` leaves it to init), hence the marker. Never ``ray stop``,
never ``pkill``: other people's clusters run on this machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_range(size: int) -> tuple[int, int]:
    """``size`` consecutive free ports (for Ray's worker port range), probed from a pid-derived base."""
    base = 20_000 + (os.getpid() * 97) % 30_000
    for start in range(base, 60_000, size):
        if all(_free(p) for p in range(start, start + size)):
            return start, start + size - 1
    raise RuntimeError("no free port range")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line), from /proc (no psutil)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        table[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmd)
    return table


def descendants(roots: list[int], table: dict[int, tuple[int, str]] | None = None) -> list[int]:
    """Every descendant of ``roots``."""
    table = table if table is not None else proc_table()
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    found, stack = [], list(roots)
    while stack:
        for child in kids.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def with_env(entry: str, table: dict[int, tuple[int, str]] | None = None) -> list[int]:
    """Processes whose environment holds ``entry`` (``NAME=value``); /proc shows only our own users'."""
    needle = entry.encode() + b"\0"
    found = []
    for pid in table if table is not None else proc_table():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if environ.startswith(needle) or b"\0" + needle in environ:
            found.append(pid)
    return found


def started(pid: int) -> str:
    """When ``pid`` started (clock ticks since boot; "" once it is gone): a pid with its start time
    names one process, a pid alone may be reused by another."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie has died; its parent has only not reaped it yet)."""
    found = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            found.append(pid)
    return found


def stop_process(proc: subprocess.Popen[bytes] | None, timeout_s: float = 30.0) -> None:
    """SIGKILL one child we started (thawed first, should it be frozen) and reap it."""
    if proc is None or proc.poll() is not None:
        return
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.kill(proc.pid, sig)
        except ProcessLookupError:
            break
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:  # in the kernel's hands now; nothing more a signal can do
        pass


def signal_all(pids: list[int], sig: int) -> None:
    """Send ``sig`` to exactly these processes (ours)."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _wait_http(url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout_s:.0f} s")


def _run(cmd: list[str], env: dict[str, str], timeout_s: float) -> None:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-6:]
        raise RuntimeError(f"{' '.join(cmd[:3])} failed: " + " | ".join(tail))


@dataclass
class RayNode:
    """One raylet of our cluster: its temp dir and ports."""

    name: str
    ip: str
    temp_dir: str
    ports: dict[str, int] = field(default_factory=dict)


MARKER = "APIFLOW_CHAOS_CLUSTER"
"""Environment variable every process of our cluster inherits (its value: the cluster's tag)."""


def cluster_tag(pid: int | None = None) -> str:
    """The prefix of a cluster's temp dirs and its marker's value: ``/tmp/rc-<pid of the bench>``."""
    return f"/tmp/rc-{os.getpid() if pid is None else pid}"


class TwoNodeCluster:
    """A head (``ray start --head``, 127.0.0.1) and a second raylet (``ray start --address``, 127.0.0.2).

    The second node has its own IP on loopback so a driver attached to the head can never be
    attached to the node we kill, and so every Ray process is told apart by its temp dir.

    Args:
        head_cpus / node_cpus: Logical CPUs of each node (the work is I/O bound; 2 real cores).
    """

    def __init__(self, head_cpus: int = 2, node_cpus: int = 2, tag: str | None = None) -> None:
        self.tag = tag or cluster_tag()
        self.head = RayNode("head", "127.0.0.1", f"{self.tag}-h")
        self.node = RayNode("node2", "127.0.0.2", f"{self.tag}-n")
        self.head_cpus, self.node_cpus = head_cpus, node_cpus
        # Our own auth token: every process of this cluster (nodes, drivers) gets it in its env,
        # nobody else's cluster or token file is read. The marker is how stop() finds every one of them.
        self.env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}", "RAY_USAGE_STATS_ENABLED": "0",
                    "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": os.urandom(16).hex(), MARKER: self.tag}  # fmt: skip
        self.env.pop("RAY_ADDRESS", None)
        self.address = ""
        self.orphans: dict[int, str] = {}
        """Processes of a killed raylet (its workers lose their parent), pid -> start time (a pid the
        kernel reused for a stranger's process is not ours): stopped with the cluster."""
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._replacer: threading.Thread | None = None

    def _ports(self, node: RayNode, head: bool) -> list[str]:
        low, high = free_range(40)
        names = ["node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
                 "dashboard-agent-grpc-port", "runtime-env-agent-port", "metrics-export-port"]  # fmt: skip
        if head:
            names += ["port", "ray-client-server-port"]
        # The OS hands out any free port, one inside the worker range (free until Ray binds it) too:
        # Ray refuses to start when two of its ports meet, so each is drawn outside what is taken.
        taken = set(range(low, high + 1))
        for name in names:
            port = free_port()
            while port in taken:
                port = free_port()
            taken.add(port)
            node.ports[name] = port
        flags = [f"--{n}={p}" for n, p in node.ports.items()]
        return flags + [f"--min-worker-port={low}", f"--max-worker-port={high}"]

    def start(self, timeout_s: float = 120.0) -> str:
        """Start both nodes; returns the GCS address (``127.0.0.1:PORT``)."""
        for node in (self.head, self.node):
            shutil.rmtree(node.temp_dir, ignore_errors=True)
        common = ["--include-dashboard=false", "--disable-usage-stats", "--include-log-monitor=false"]
        head = [str(VENV_BIN / "ray"), "start", "--head", f"--node-ip-address={self.head.ip}",
                f"--temp-dir={self.head.temp_dir}", f"--num-cpus={self.head_cpus}", *common,
                *self._ports(self.head, head=True)]  # fmt: skip
        _run(head, self.env, timeout_s)
        self.address = f"{self.head.ip}:{self.head.ports['port']}"
        self.start_node(timeout_s)
        return self.address

    def start_node(self, timeout_s: float = 120.0) -> None:
        """(Re)start the second raylet (not once stop() began: it would outlive the cluster)."""
        with self._lock:
            if self._closing.is_set():
                return
            self._start_node(timeout_s)

    def _start_node(self, timeout_s: float) -> None:
        worker = [str(VENV_BIN / "ray"), "start", f"--address={self.address}", f"--node-ip-address={self.node.ip}",
                  f"--temp-dir={self.node.temp_dir}", f"--num-cpus={self.node_cpus}",
                  "--disable-usage-stats", "--include-log-monitor=false",
                  *self._ports(self.node, head=False)]  # fmt: skip
        _run(worker, self.env, timeout_s)

    def stop_node(self) -> None:
        """SIGKILL whatever is left of the second node (its raylet's orphans included)."""
        daemons = self.daemons(self.node)
        signal_all(daemons + descendants(daemons) + self.live_orphans(), signal.SIGKILL)

    def live_orphans(self) -> list[int]:
        """The killed raylet's orphans that still run (the same processes, not reused pids)."""
        return [pid for pid, began in self.orphans.items() if began and started(pid) == began]

    def replace_node_later(self, delay_s: float) -> None:
        """After ``delay_s`` a fresh second node joins (as an autoscaler would add one), unless the
        cluster is stopping by then: a replacement started during stop() would be nobody's to stop."""

        def replace() -> None:
            if self._closing.wait(delay_s):
                return
            with self._lock:
                if self._closing.is_set():
                    return
                self.stop_node()
                self._start_node(120.0)

        self._replacer = threading.Thread(target=replace, name="chaos-replace-node", daemon=True)
        self._replacer.start()

    def ours(self) -> list[int]:
        """Every live process of this cluster: the marker in its environment or a temp dir on its command
        line, their descendants (retitled workers), a killed raylet's orphans. Never this process."""
        table = proc_table()
        named = with_env(f"{MARKER}={self.tag}", table) + [
            p for p, (_, cmd) in table.items() if self.head.temp_dir in cmd or self.node.temp_dir in cmd
        ]
        found = {*named, *descendants(named, table), *self.live_orphans()} - {os.getpid()}
        return alive(sorted(found))

    def daemons(self, node: RayNode) -> list[int]:
        """Ray daemons of one node (their command lines name its temp dir)."""
        return [p for p, (_, cmd) in proc_table().items() if node.temp_dir in cmd and p != os.getpid()]

    def kill_raylet(self, node: RayNode) -> tuple[int, list[int]] | None:
        """SIGKILL ``node``'s raylet; ``(raylet pid, its descendants)`` (kept as orphans to stop later)."""
        raylet = self.raylet(node)
        if raylet is None:
            return None
        below = descendants([raylet])
        self.orphans.update({pid: started(pid) for pid in below})
        os.kill(raylet, signal.SIGKILL)
        return raylet, below

    def raylet(self, node: RayNode) -> int | None:
        """The raylet process of ``node``."""
        table = proc_table()
        for pid, (_, cmd) in table.items():
            if node.temp_dir in cmd and "/raylet" in cmd.split(" ", 1)[0]:
                return pid
        return None

    def workers(self, node: RayNode, title: str = "ray::TrialWorker") -> list[int]:
        """Worker processes of ``node`` whose title starts with ``title`` (descendants of its raylet)."""
        raylet = self.raylet(node)
        if raylet is None:
            return []
        table = proc_table()
        return [p for p in descendants([raylet], table) if table.get(p, (0, ""))[1].startswith(title)]

    def alive_nodes(self) -> int:
        """Nodes the GCS reports alive (asks through the ``ray`` CLI-free state API in a subprocess)."""
        code = (
            "import ray,sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False);"
            "print(sum(1 for n in ray.nodes() if n['Alive']))"
        )
        out = subprocess.run([sys.executable, "-c", code, self.address], env=self.env, capture_output=True,
                             text=True, timeout=60)  # fmt: skip
        return int(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else 0

    def stop(self, timeout_s: float = 60.0) -> list[int]:
        """SIGTERM then SIGKILL exactly our processes until none is left; remove our temp dirs.

        Returns the processes still alive at the deadline (none, unless the kernel holds one)."""
        self._closing.set()
        if self._replacer is not None:  # a replacement node being started now: let it finish, then stop it
            self._replacer.join(timeout=150)
        with self._lock:
            deadline = time.monotonic() + timeout_s
            signal_all(self.ours(), signal.SIGTERM)  # a chance to exit cleanly, then no more
            time.sleep(1.0)
            left = self.ours()
            while left and time.monotonic() < deadline:
                signal_all(left, signal.SIGKILL)
                time.sleep(0.2)
                left = self.ours()
        for node in (self.head, self.node):
            shutil.rmtree(node.temp_dir, ignore_errors=True)
        return left


class MotoS3:
    """``moto_server`` as a subprocess on 127.0.0.1 (a process, so SIGSTOP can freeze it)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _wait_http(f"{self.url}/moto-api/", 60)
        except BaseException:
            self.stop()
            raise
        return self.url

    def bucket(self, name: str) -> dict[str, Any]:
        """Create ``name``; the s3fs storage options for it."""
        import s3fs

        options = {"key": "foo", "secret": "foo", "client_kwargs": {"endpoint_url": self.url}}
        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem(**options).mkdir(name)
        return options

    def pause(self, seconds: float) -> None:
        """Freeze the server (SIGSTOP), then let it go (SIGCONT): connections hang, nothing fails fast."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        stop_process(self.proc)


class Standin:
    """The stand-in provider as a subprocess (its own cores' worth of GIL), with its fault dice.

    Args:
        faults: ``StandinConfig`` fields (``p_429`` ...).
    """

    def __init__(self, **faults: Any) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.faults = faults
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        flags = [f"--{k.replace('_', '-')}={v}" for k, v in self.faults.items()]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "apiflow.testing.standin_server", f"--port={self.port}", *flags],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _wait_http(f"{self.url}/stats", 60)
        except BaseException:
            self.stop()
            raise
        return self.url

    def stats(self) -> dict[str, Any]:
        """The server's counters (``StandinStats``)."""
        with urllib.request.urlopen(f"{self.url}/stats", timeout=30) as answer:
            return dict(json.loads(answer.read()))

    def stop(self) -> None:
        stop_process(self.proc)
