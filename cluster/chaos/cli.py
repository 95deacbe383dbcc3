"""The chaos suite's command line (``bench/chaos.py``): flags to a ``Suite``, here so a test can check
what a documented command line means without running it."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from cluster.chaos.sizes import Suite

INTS = (
    "trials",
    "faults_trials",
    "epochs",
    "driver_kills",
    "budget_kills",
    "actors",
    "trials_per_actor",
    "seed",
)
FLOATS = ("s3_pause_s", "fault_rate", "hang_s", "call_timeout_s", "budget_fraction", "deadline_s")
SCENARIOS = ("clean", "faults", "chaos", "budget")
HELP = {
    "faults_trials": "trials of the faults scenario, the first of the clean grid's (default 0: min(1000, --trials))"
}


@dataclasses.dataclass
class Command:
    suite: Suite
    scenarios: list[str]
    json_out: Path | None


def parser(description: str = "") -> argparse.ArgumentParser:
    # Defaults from the dataclass fields, not an instance: an instance has its derived sizes filled in.
    defaults = {f.name: f.default for f in dataclasses.fields(Suite)}
    parser = argparse.ArgumentParser(description=description)
    for kind, names in ((int, INTS), (float, FLOATS)):
        for name in names:
            parser.add_argument(
                f"--{name.replace('_', '-')}", type=kind, default=defaults[name], help=HELP.get(name)
            )
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--inproc", default="", help="scenarios to run without Ray (clean,faults)")
    parser.add_argument("--work", help="scratch folder for grid files and driver logs, kept (default: a temp "
                        "dir, removed when every check passes)")  # fmt: skip
    parser.add_argument("--json", help="also write the figures and checks here")
    return parser


def command(argv: list[str] | None = None, description: str = "") -> Command:
    """Parse the flags; a bad one (sizes that cannot give a verdict included) exits 2, as argparse does."""
    p = parser(description)
    args: dict[str, Any] = vars(p.parse_args(argv))
    scenarios = [x for x in args.pop("scenarios").split(",") if x]
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        p.error(f"unknown scenarios {unknown}; known: {','.join(SCENARIOS)}")
    if "clean" not in scenarios:
        p.error("the clean scenario is the reference; keep it in --scenarios")
    args["inproc"] = tuple(x for x in args.pop("inproc").split(",") if x)
    out, work = args.pop("json"), args.pop("work")
    try:
        suite = Suite(**args, work=Path(work) if work else None)
    except ValueError as exc:
        p.error(str(exc))
    return Command(suite, scenarios, Path(out) if out else None)
