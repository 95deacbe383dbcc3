"""Run the chaos suite: start the cluster and S3, play the scenarios, stop everything.

Teardown is not optional: whether the scenarios pass, fail, raise or are interrupted (Ctrl-C, or a
SIGTERM turned into an exception by ``interruptible``), every process the suite started is stopped by its
own pid and every temp folder it made is removed, except a work folder worth reading after a failure."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from cluster.chaos.kit import MotoS3, TwoNodeCluster
from cluster.chaos.scenarios import Chaos
from cluster.chaos.sizes import Suite


class Interrupted(KeyboardInterrupt):
    """A SIGTERM or SIGHUP, raised where the suite is so its teardown runs as on Ctrl-C."""


def run(suite: Suite, scenarios: list[str]) -> tuple[list[str], bool]:
    """Start the cluster and S3, run the scenarios, stop everything; ``(report lines, all checks passed)``.

    A work folder the suite made itself (``suite.work`` None) is removed when every check passed and kept,
    and named on stderr, otherwise (its driver logs say what went wrong)."""
    made = suite.work is None
    work = Path(tempfile.mkdtemp(prefix="chaos-")) if made else Path(str(suite.work))
    work.mkdir(parents=True, exist_ok=True)
    suite = dataclasses.replace(suite, work=work)
    ok = False
    try:
        lines, ok = _play(suite, scenarios)
    finally:
        if made and ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"chaos: grid files and driver logs kept in {work}", file=sys.stderr, flush=True)
    return lines, ok


def _play(suite: Suite, scenarios: list[str]) -> tuple[list[str], bool]:
    cluster, moto = TwoNodeCluster(), MotoS3()
    began = time.monotonic()
    chaos: Chaos | None = None
    setup_s = 0.0
    s3_up = threading.Thread(target=moto.start, daemon=True)  # meanwhile the head starts
    try:
        s3_up.start()
        cluster.start()
        s3_up.join(timeout=120)
        chaos = Chaos(suite, cluster, moto)
        setup_s = time.monotonic() - began
        for name in scenarios:
            print(
                f"chaos: scenario {name} starts at {time.monotonic() - began:.0f} s",
                file=sys.stderr,
                flush=True,
            )
            try:
                getattr(chaos, f"scenario_{name}")()
            except Exception as exc:  # noqa: BLE001 - one broken scenario must not hide the others' figures
                chaos.check(f"{name}: scenario ran to its end", False, f"{type(exc).__name__}: {exc}"[:300])
            # so far: an interrupted run keeps its figures
            print("\n".join(chaos.table()), file=sys.stderr, flush=True)
    finally:
        with _shielded():
            left = teardown(cluster, moto, chaos, s3_up)
    assert chaos is not None  # had the cluster or S3 not come up, that would have raised
    if left:
        chaos.check("teardown: every process the suite started is stopped", False, f"still alive: {left}")
    lines = [f"chaos suite: {suite.trials} trials x scenarios {','.join(scenarios)}; cluster + S3 up in "
             f"{setup_s:.1f} s; total {time.monotonic() - began:.1f} s; load avg "
             + " ".join(f"{x:.1f}" for x in os.getloadavg()), "", *chaos.table()]  # fmt: skip
    return lines, all(c.ok for c in chaos.checks)


def teardown(
    cluster: TwoNodeCluster, moto: MotoS3, chaos: Chaos | None, s3_up: threading.Thread
) -> list[int]:
    """Stop the drivers, the cluster (its replacement node, client server and orphans included) and S3;
    remove the cluster's temp dirs. Returns the pids still alive (none expected)."""
    for proc in chaos.drivers if chaos else []:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = cluster.stop()
    if s3_up.ident is not None:  # an S3 server still starting would come up after its stop
        s3_up.join(timeout=120)
    moto.stop()
    return left


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Let teardown finish: a second Ctrl-C (or SIGTERM) while it runs is ignored (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``Interrupted`` in the main thread, so teardown runs as on Ctrl-C."""

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum).name)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
