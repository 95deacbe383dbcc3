"""Run the chaos suite: start the cluster and S3, play the scenarios, stop everything."""

from __future__ import annotations

import os
import sys
import threading
import time

from cluster.chaos.kit import MotoS3, TwoNodeCluster
from cluster.chaos.scenarios import Chaos, Suite


def run(suite: Suite, scenarios: list[str]) -> tuple[list[str], bool]:
    """Start the cluster and S3, run the scenarios, stop everything; ``(report lines, all checks passed)``."""
    cluster, moto = TwoNodeCluster(), MotoS3()
    began = time.monotonic()
    chaos: Chaos | None = None
    try:
        s3_up = threading.Thread(target=moto.start, daemon=True)  # meanwhile the head starts
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
            print(
                "\n".join(chaos.table()), file=sys.stderr, flush=True
            )  # so far: an interrupted run keeps its figures
    finally:
        for proc in chaos.drivers if chaos else []:  # an interrupted bench leaves no driver behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        cluster.stop()
        moto.stop()
    lines = [f"chaos suite: {suite.trials} trials x scenarios {','.join(scenarios)}; cluster + S3 up in "
             f"{setup_s:.1f} s; total {time.monotonic() - began:.1f} s; load avg "
             + " ".join(f"{x:.1f}" for x in os.getloadavg()), "", *chaos.table()]  # fmt: skip
    return lines, all(c.ok for c in chaos.checks)
