"""The chaos suite (issue 9 §4): a crash anywhere loses nothing. One command:

    .venv/bin/python bench/chaos.py [--trials 5000] [--driver-kills 3] [--s3-pause-s 10] [--fault-rate 0.10]

On a real two-node local Ray cluster (``ray start --head`` on 127.0.0.1 plus a second raylet on
127.0.0.2, own temp dirs and ports), a moto S3 server (a subprocess, so it can be frozen) and the
stand-in provider (a subprocess; litellm calls it over HTTP), one grid of provider trials runs:

clean       the grid against a fault-free stand-in, no kills: the reference rows and pass counts.
faults      the clean grid's first ``--faults-trials`` trials (default min(1,000, --trials)) against the
            faulty stand-in (429 + Retry-After, 5xx, hangs, 200s with a malformed JSON body;
            ``--fault-rate`` in total), nothing killed: every injected fault must appear in a record (a
            retry, or a failure row that a resume retries).
chaos       the whole grid against the faulty stand-in while the driver is SIGKILLed ``--driver-kills``
            times (rerun after each), one worker actor process is SIGKILLed, the second node's raylet
            is SIGKILLed (a replacement joins later), the S3 server is frozen ``--s3-pause-s`` seconds;
            then reruns until complete. With a budget 1.5x the clean spend (the cap must not stop it).
budget      the grid with a cap of ``--budget-fraction`` x the clean spend and driver kills: the true
            spend (tokens the stand-in billed, killed attempts included) may pass the cap only by what
            was in flight; a rerun after the cap must start nothing.

Checks (exit status 1 if any fails): trials lost 0, duplicate rows 0, per-trial results and pass
counts equal to the clean run, every fault recorded, every failed trial retried on resume, spend
within the cap plus in-flight allowance. Every wait has a deadline; the bench never hangs.

Every process it starts (Ray daemons, the Ray client server, workers, drivers, moto, the stand-in) is
stopped by its own pid at the end, on a failure, on Ctrl-C and on SIGTERM; its Ray temp dirs are removed,
and so is its temp work folder unless a check failed (then its path is printed). ``--work`` is kept.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cluster.chaos.cli import command  # noqa: E402
from cluster.chaos.suite import interruptible, run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    cmd = command(argv, description=__doc__.splitlines()[0])
    try:
        with interruptible():  # SIGTERM/SIGHUP tear down like Ctrl-C
            lines, ok = run(cmd.suite, cmd.scenarios)
    except KeyboardInterrupt as exc:
        print(
            f"chaos: interrupted ({str(exc) or 'SIGINT'}); every process it started is stopped",
            file=sys.stderr,
        )
        return 130
    print("\n".join(lines))
    if cmd.json_out:
        cmd.json_out.write_text(json.dumps({"lines": lines, "ok": ok}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
