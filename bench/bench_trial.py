"""Per-trial harness cost of a graded 12-call oracle trial on ``bank/v1`` (no model latency).

One command: ``.venv/bin/python bench/bench_trial.py [--mix oracle|calibrated] [--trials N] [--bank DIR]
[--profile | --calls]``.

The trials are the bank's tasks whose golden path is 12 tool calls (13 model calls; three
tasks on ``bank/v1``), played in turn. Measures, in one process and one run:
  * floor     - a bare asyncio ReAct loop over the same scripted turns, tools answered from a dict:
                the pure-Python cost of awaiting the model and growing the message list, nothing else;
  * tools     - world + workspace + toolbox set up, then the trial's recorded tool calls replayed
                (no model, no loop, no record): the share of the world and tool engines;
  * ungraded  - ``run_trial`` with grading switched off: world + workspace + tools + loop + record;
  * trial     - ``run_trial`` as an offline run plays it (graded, one run's ``Replay`` shared by the
                trials: every trial after the first of a (task, epoch) is answered and graded from it);
  * cold      - ``trial`` without replay: the world works out every answer and the grader grades, as
                for a new trial (and for every provider, plug-in or external model's trial);
  * sync      - ``run_trial_sync`` (adds one private event loop per trial).
Reports CPU (process_time) and wall (perf_counter) per trial and per tool call, and ratios to the
floor (the baseline measured in the same run). Target (issue 11 §1): <= 0.6 ms CPU per graded trial.
Rounds interleave the variants; the median of 7 is reported, with the spread (best and worst round).
For the comparison with Inspect AI see ``bench/bench_vs_inspect.py``.

``--mix calibrated`` measures the grid's trial instead (issue 11 §2): the 19 calibrated sims
(``apiflow/sim:calibrated-<slug>``) on a fixed sample of ``bank/v1`` (every 29th task by id, 17
tasks), trial i being (task i mod 17, sim i mod 19), so the 323 trials of the default round are
every pair once and a shorter ``--trials`` still spreads over tasks and sims. Each trial is what a
grid actor does: ``make_model`` + graded ``run_trial`` + the record's JSON; variants ``model``
(``make_model`` alone), ``ungraded``, ``trial`` (graded), ``stored`` (``trial`` + ``json_bytes``) and
``cold`` (``stored`` without replay: a new trial). In the sample, as in a grid,
the 19 sims of a (task, epoch) share its worlds, so ``stored`` replays what an earlier sim sent.
Reports CPU per trial and per tool call (the sample's mean tool calls); ``--calls`` gives the
deterministic function calls per trial of each.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from unittest import mock

from trialkit import ROUNDS, V1_BANK, time_once, trial_kwargs

from apiflow.agent import TrialSpec, trial_seed
from apiflow.agent import trial as trial_module
from apiflow.agent.heap import settle_loaded
from apiflow.agent.replay import Replay
from apiflow.bank import Bank, load_bank
from apiflow.bank.task import Task
from apiflow.models import make_model
from apiflow.models.base import ModelOutput, ToolCall, Usage
from apiflow.models.offline import golden_turns
from apiflow.runner import play_trial, play_trial_sync

TARGET_MS = 0.6
TOOL_CALLS = 12


def pick_tasks(bank: Bank, tool_calls: int = TOOL_CALLS) -> list[Task]:
    """The tasks whose golden path has ``tool_calls`` calls (else the closest such count)."""

    def calls(t: Task) -> int:
        return sum(len(step.calls) for step in t.golden)

    best = min(abs(calls(t) - tool_calls) for t in bank.tasks.values())
    return [t for t in bank.tasks.values() if abs(calls(t) - tool_calls) == best]


async def _floor_trial(outputs: list[ModelOutput], results: dict[str, str]) -> int:
    """The irreducible loop: await a model, append its turn, append one result per call."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    calls = 0

    async def generate(i: int) -> ModelOutput:
        return outputs[i]

    for i in range(len(outputs)):
        out = await generate(i)
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": out.text}],
                "tool_calls": [
                    {"id": c.id, "name": c.name, "arguments": c.arguments} for c in out.tool_calls
                ],
            }
        )
        for call in out.tool_calls:
            messages.append(
                {
                    "role": "tool",
                    "content": results[call.name],
                    "tool_call_id": call.id,
                    "function": call.name,
                }
            )
            calls += 1
    return calls


def _floor_inputs(task: Task) -> tuple[list[ModelOutput], dict[str, str]]:
    outputs = []
    for i, turn in enumerate(golden_turns(task)):
        calls = tuple(ToolCall(f"c{i}-{j}", p.call.name, p.call.arguments) for j, p in enumerate(turn.calls))
        outputs.append(ModelOutput(text=turn.text, tool_calls=calls, usage=Usage(100, 10, 1000)))
    results = {name: '{"status": 200}' for name in ("read", "write", "edit", "search", "execute")}
    return outputs, results


def _tools_batch(
    bank: Bank, tasks: list[Task], recorded: list[list[tuple[str, Any]]]
) -> Callable[[int], None]:
    """Set up a fresh world + workspace + toolbox per trial and replay the recorded calls (world
    answers shared by one run's ``Replay``, as the ``trial`` variant's are)."""
    worlds = [bank.world_of(task) for task in tasks]
    replay = Replay()

    def batch(n: int) -> None:
        for i in range(n):
            k = i % len(tasks)
            trial = trial_module._Trial(tasks[k], worlds[k], 0, 1, replay)  # the recording's seed: same refs
            trial.setup()
            for name, arguments in recorded[k]:
                trial.toolbox.call(name, arguments)

    return batch


def _async_batch(make: Callable[[int], Awaitable[Any]]) -> Callable[[int], None]:
    def batch(n: int) -> None:
        async def go() -> None:
            for i in range(n):
                await make(i)

        asyncio.run(go())

    return batch


Timing = tuple[float, float, float, float]
"""(median round cpu, best round cpu, worst round cpu, median round wall), seconds per batch."""


def measure(
    bank: Bank, tasks: list[Task], n: int, recorded: list[list[tuple[str, Any]]]
) -> dict[str, Timing]:
    """Timings of each variant for ``n`` trials (the tasks in turn)."""
    worlds = [bank.world_of(task) for task in tasks]

    shared = Replay()

    def graded(i: int, replay: Replay | None = shared) -> Awaitable[Any]:
        task = tasks[i % len(tasks)]
        model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
        return play_trial(
            TrialSpec(task=task, world=worlds[i % len(tasks)], **trial_kwargs(bank, task, 1)),
            model,
            replay=replay,
        )

    def sync_batch(n: int) -> None:
        for i in range(n):
            task = tasks[i % len(tasks)]
            model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
            play_trial_sync(
                TrialSpec(task=task, world=worlds[i % len(tasks)], **trial_kwargs(bank, task, 1)),
                model,
                replay=shared,
            )

    floors = [_floor_inputs(task) for task in tasks]
    trial_batch = _async_batch(graded)

    def ungraded_batch(n: int) -> None:
        with mock.patch.object(trial_module._Trial, "grade", lambda self: None):
            trial_batch(n)

    def cold(i: int) -> Awaitable[Any]:
        return graded(i, None)  # the world works out every answer and the grader grades: a new trial

    variants: dict[str, Callable[[int], None]] = {
        "floor": _async_batch(lambda i: _floor_trial(*floors[i % len(floors)])),
        "tools": _tools_batch(bank, tasks, recorded),
        "ungraded": ungraded_batch,
        "trial": trial_batch,
        "cold": _async_batch(cold),
        "sync": sync_batch,
    }
    for batch in variants.values():
        batch(min(n, 20))  # warm caches and imports
    # Rounds interleave the variants, so a burst of load from other processes hits them alike.
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, batch in variants.items():
            samples[name].append(time_once(n, batch))
    return {
        name: (
            statistics.median(c for c, _ in runs),
            min(c for c, _ in runs),
            max(c for c, _ in runs),
            statistics.median(w for _, w in runs),
        )
        for name, runs in samples.items()
    }


def report(tasks: list[Task], tool_calls: int, model_calls: int, n: int, timings: dict[str, Timing]) -> bool:
    """Print the table; True when the graded trial meets the target."""
    print(
        f"tasks {', '.join(t.id for t in tasks)}: {model_calls} model calls, {tool_calls} tool calls per trial; "
        f"{n} trials x {ROUNDS} interleaved rounds; python {sys.version.split()[0]}; "
        f"load {os.getloadavg()[0]:.2f}"
    )
    floor_cpu = timings["floor"][0] / n
    print(
        f"{'variant':10s} {'cpu ms/trial':>13s} {'spread (best-worst round)':>26s} {'wall ms/trial':>14s} "
        f"{'cpu us/tool call':>17s} {'x floor':>8s}"
    )
    for name, (cpu, best, worst, wall) in timings.items():
        per = cpu / n
        spread = f"{best / n * 1e3:.3f}-{worst / n * 1e3:.3f}"
        print(
            f"{name:10s} {per * 1e3:13.3f} {spread:>26s} {wall / n * 1e3:14.3f} "
            f"{per / tool_calls * 1e6:17.1f} {per / floor_cpu:8.1f}"
        )
    graded = timings["trial"][0] / n * 1e3
    ok = graded <= TARGET_MS
    print(
        f"graded trial (median round): {graded:.3f} ms CPU = {graded / (floor_cpu * 1e3):.1f}x the floor "
        f"({floor_cpu * 1e3:.3f} ms) vs target {TARGET_MS} ms -> {'OK' if ok else 'OVER'}"
    )
    cold = timings["cold"][0] / n * 1e3
    print(
        f"cold trial (no replay: the world answers every request, the grader grades): {cold:.3f} ms CPU vs target "
        f"{TARGET_MS} ms -> {'OK' if cold <= TARGET_MS else 'OVER'}; replay saves {1 - graded / cold:.0%}"
    )
    # Differences of best rounds: less sensitive to other processes' load than medians.
    t, u, g = (timings[k][1] / n * 1e3 for k in ("tools", "ungraded", "trial"))
    print(
        f"split (best rounds): world+tools {t:.3f} ms ({t / g:.0%}), agent loop + offline model + record "
        f"{u - t:.3f} ms ({(u - t) / g:.0%}), grading {g - u:.3f} ms ({(g - u) / g:.0%})"
    )
    return ok


def profile(bank: Bank, tasks: list[Task], n: int) -> None:
    """cProfile of ``n`` graded trials in one event loop, top 25 by own time."""

    async def go() -> None:
        for i in range(n):
            task = tasks[i % len(tasks)]
            model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
            await play_trial(
                TrialSpec(task=task, world=bank.world_of(task), **trial_kwargs(bank, task, 1)), model
            )

    prof = cProfile.Profile()
    prof.runcall(asyncio.run, go())
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def count_calls(bank: Bank, tasks: list[Task], n: int, recorded: list[list[tuple[str, Any]]]) -> None:
    """Python function calls per trial (cProfile's count) of the tools and graded variants.

    Deterministic, unlike CPU time on a shared machine: the figure to compare before and after a change.
    """
    worlds = [bank.world_of(task) for task in tasks]

    shared = Replay()

    def graded(i: int, replay: Replay | None = shared) -> Awaitable[Any]:
        task = tasks[i % len(tasks)]
        model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
        return play_trial(
            TrialSpec(task=task, world=worlds[i % len(tasks)], **trial_kwargs(bank, task, 1)),
            model,
            replay=replay,
        )

    for name, batch in (("tools", _tools_batch(bank, tasks, recorded)), ("trial", _async_batch(graded))):
        batch(min(n, 20))
        prof = cProfile.Profile()
        prof.runcall(batch, n)
        print(f"{name:10s} {pstats.Stats(prof).total_calls / n:10.1f} function calls per trial ({n} trials)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mix",
        choices=("oracle", "calibrated"),
        default="oracle",
        help="oracle: the 12-call oracle trial (§1); calibrated: the grid's 19 calibrated sims (§2)",
    )
    parser.add_argument(
        "--trials", type=int, help="trials per round (default 200; calibrated: 323, every pair once)"
    )
    parser.add_argument("--bank", default=str(V1_BANK), help="bank folder (default bank/v1)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the graded trial")
    parser.add_argument(
        "--calls",
        action="store_true",
        help="print function calls per trial (tools, graded) instead of timing",
    )
    args = parser.parse_args()
    bank = load_bank(args.bank)
    settle_loaded()  # as `apiflow run`, `panel check` and the grid's actors do before their trials
    if args.mix == "calibrated":
        from trial_calibrated import calibrated_main  # bench/ is on sys.path as the script's folder

        return calibrated_main(bank, args.trials or 323, args.calls, args.profile)
    args.trials = args.trials or 200
    tasks = pick_tasks(bank)
    checks = [
        play_trial_sync(
            TrialSpec(task=task, world=bank.world_of(task), **trial_kwargs(bank, task, 1)),
            make_model("apiflow/oracle", task, trial_seed(0, task.id, 1)),
        )
        for task in tasks
    ]
    for task, check in zip(tasks, checks, strict=True):
        assert check.passed, f"oracle must pass {task.id}: {check.failure_reason}"
    if args.profile:
        profile(bank, tasks, args.trials)
        return 0
    recorded = [
        [(c["name"], c["arguments"]) for m in ch.messages for c in m.get("tool_calls", ())] for ch in checks
    ]
    if args.calls:
        count_calls(bank, tasks, args.trials, recorded)
        return 0
    timings = measure(bank, tasks, args.trials, recorded)
    tool_calls = round(statistics.mean(ch.apiflow.tool_calls for ch in checks))
    model_calls = round(statistics.mean(ch.apiflow.model_calls for ch in checks))
    report(tasks, tool_calls, model_calls, args.trials, timings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
