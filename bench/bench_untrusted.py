"""What the bounds on model input cost an honest trial, and what hostile input costs the harness.

One command: ``.venv/bin/python bench/bench_untrusted.py [--trials N]``.

1. Overhead: oracle trials over every sample-bank task, with the turn intake and the argument scan
   as they are, against the same trials with both replaced by pass-throughs (the baseline, measured
   in the same run, rounds interleaved, median of 7). Prints CPU per trial and the ratio.
2. Hostile input, one trial or call each (wall time): the largest and deepest arguments the bounds
   admit and refuse, 200 parallel calls, a final text built against the grader's card scan, and a
   trial that only the always-on transcript bound ends.
3. The largest honest figures, for the bound values: over every golden path of ``bank/v1`` the
   largest call arguments, tool result, transcript and workspace (docs/design/031).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any
from unittest import mock

from apiflow.agent import TrialLimits, TrialSpec, trial_seed
from apiflow.agent import intake as intake_module
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.grading.answer import extract_card
from apiflow.models import make_model
from apiflow.models.base import GenerateConfig, ModelOutput, ToolCall
from apiflow.runner import play_trial, play_trial_sync
from apiflow.tools import limits as limits_module
from apiflow.tools import toolbox as toolbox_module
from apiflow.tools.limits import ARGUMENT_CHARS, ARGUMENT_DEPTH, Scan

ROUNDS = 7


@contextmanager
def bounds_off() -> Any:
    """The baseline: intake and argument scan replaced by pass-throughs."""

    def passthrough(self: Any, raw: ModelOutput, budget: int) -> intake_module.CheckedTurn:
        calls = raw.tool_calls
        return intake_module.CheckedTurn(raw, tuple(c.arguments for c in calls), len(calls), 0)

    with (
        mock.patch.object(intake_module.TurnIntake, "check", passthrough),
        mock.patch.object(toolbox_module, "scan", lambda value: Scan(value, 0, 0)),
    ):
        yield


def _trials(bank: Bank, n: int) -> Callable[[], None]:
    tasks = list(bank.tasks.values())

    async def run() -> None:
        for i in range(n):
            task = tasks[i % len(tasks)]
            model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
            await play_trial(
                TrialSpec(
                    task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                    bank_hash=bank.hash, run_id="bench", model_slug="apiflow-oracle",
                ),
                model,
            )

    return lambda: asyncio.run(run())


def overhead(bank: Bank, n: int) -> None:
    batch = _trials(bank, n)
    batch()  # warm
    on: list[float] = []
    off: list[float] = []
    for _ in range(ROUNDS):
        c0 = time.process_time()
        batch()
        on.append(time.process_time() - c0)
        with bounds_off():
            c0 = time.process_time()
            batch()
            off.append(time.process_time() - c0)
    with_ms, base_ms = statistics.median(on) * 1000 / n, statistics.median(off) * 1000 / n
    print(f"honest oracle trial, CPU per trial (median of {ROUNDS} rounds of {n}):")
    print(f"  bounds off (baseline) {base_ms:.3f} ms   bounds on {with_ms:.3f} ms   ratio {with_ms / base_ms:.3f}")


class _Playback:
    model_api = "bench/playback"

    def __init__(self, turns: list[ModelOutput]) -> None:
        self.turns, self.served = turns, 0

    async def generate(self, messages: list[Any], tools: list[Any], config: GenerateConfig) -> ModelOutput:
        turn = self.turns[min(self.served, len(self.turns) - 1)]
        self.served += 1
        return turn


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def hostile(bank: Bank) -> None:
    task = bank.task("sample-w01-sub01")

    def trial(turns: list[ModelOutput], limits: TrialLimits | None = None) -> tuple[float, str]:
        t0 = time.perf_counter()
        record = play_trial_sync(
            TrialSpec(
                task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                bank_hash=bank.hash, run_id="bench", limits=limits, model_slug="hostile",
            ),
            _Playback(turns),
        )
        hits = ",".join(f"{h.limit}x{h.hits}" for h in record.apiflow.limits_hit) or "-"
        outcome = f"{record.apiflow.termination}/{record.apiflow.limit or '-'} hits {hits}"
        return time.perf_counter() - t0, f"{outcome}, record {len(record.to_json()) / 1e6:.2f} MB"

    done = ModelOutput("done")
    cases: list[tuple[str, list[ModelOutput], TrialLimits | None]] = [
        ("write just under argument_chars", [_turn("write", {"entity_ref": "variable:v", "content": {"value": "x" * (ARGUMENT_CHARS - 100)}}), done], None),  # noqa: E501
        ("arguments 10 MB (string)", [_turn("search", json.dumps({"query": "q" * 10_000_000})), done], None),
        ("arguments 100,000 deep (string)", [_turn("search", "[" * 100_000), done], None),
        (f"arguments {ARGUMENT_DEPTH + 1} deep (dict)", [_turn("write", {"entity_ref": "variable:v", "content": {"value": _deep(ARGUMENT_DEPTH)}}), done], None),  # noqa: E501
        ("200 parallel calls", [ModelOutput(tool_calls=tuple(ToolCall(f"c{i}", "search", {"query": "x"}) for i in range(200))), done], None),  # noqa: E501
        ("final text of 1 MB of '{'", [ModelOutput("{" * 1_000_000)], None),
        ("final text of nested '{\"a\":' x 200k", [ModelOutput('{"a":' * 200_000)], None),
        ("endless 256 KiB calls, every limit off", [_turn("nope", "x" * (ARGUMENT_CHARS - 10))], TrialLimits(None, None, None, None)),  # noqa: E501
    ]  # fmt: skip
    print("hostile input, one trial each (wall):")
    for label, turns, limits in cases:
        seconds, what = trial(turns, limits)
        print(f"  {label:<42} {seconds:7.3f} s   {what}")
    for label, text in (("1 MB of '{'", "{" * 1_000_000), ("nested '{\"a\":' x 200k", '{"a":' * 200_000)):
        t0 = time.perf_counter()
        extract_card(text)
        print(f"  card scan alone, {label:<25} {time.perf_counter() - t0:7.3f} s")


def _turn(name: str, arguments: Any) -> ModelOutput:
    return ModelOutput(tool_calls=(ToolCall("c", name, arguments),))


def honest_maxima(bank: Bank) -> None:
    """Largest figures over every oracle trial of the bank (what the bounds must leave room for)."""
    most = {"argument chars": 0, "argument depth": 0, "tool result chars": 0, "transcript chars": 0,
            "workspace entities": 0, "stored chars": 0, "parallel calls": 0, "text chars": 0}  # fmt: skip
    real_call = toolbox_module.Toolbox.call

    def call(self: Any, name: str, arguments: Any) -> Any:
        result = real_call(self, name, arguments)
        checked = limits_module.scan(arguments if isinstance(arguments, dict) else {})
        most["argument chars"] = max(most["argument chars"], checked.chars)
        most["argument depth"] = max(most["argument depth"], _depth(arguments))
        most["tool result chars"] = max(most["tool result chars"], len(result.content))
        ws = self.workspace
        most["workspace entities"] = max(most["workspace entities"], len(ws.all_entities()) + len(ws.variables()))
        most["stored chars"] = max(most["stored chars"], ws.stored_chars)
        return result

    with mock.patch.object(toolbox_module.Toolbox, "call", call):
        for task in bank.tasks.values():
            model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
            record = play_trial_sync(
                TrialSpec(
                    task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                    bank_hash=bank.hash, run_id="bench", model_slug="apiflow-oracle",
                ),
                model,
            )
            most["transcript chars"] = max(most["transcript chars"], len(json.dumps(record.messages)))
            for m in record.messages:
                if m["role"] == "assistant":
                    most["parallel calls"] = max(most["parallel calls"], len(m.get("tool_calls") or ()))
                    text = "".join(b.get("text", "") for b in m["content"])
                    most["text chars"] = max(most["text chars"], len(text))
    print(f"honest maxima over the {len(bank.tasks)} oracle trials of {bank.name}:")
    for name, value in most.items():
        print(f"  {name:<20} {value:>10,}")


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=130, help="oracle trials per overhead round")
    parser.add_argument("--maxima-bank", default="bank/v1", help="bank for the honest maxima")
    args = parser.parse_args()
    bank = load_bank(DEFAULT_BANK)
    overhead(bank, args.trials)
    hostile(bank)
    honest_maxima(load_bank(args.maxima_bank))


if __name__ == "__main__":
    main()
