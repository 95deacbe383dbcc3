"""Issue 11 §3: the harness's CPU per model call on top of litellm's own, against the same stand-in.

The stand-in provider (``python -m apiflow.testing.standin_server``, zero latency) runs in its own
process on 127.0.0.1, so this process's CPU time is the client side only. The calls replay a real
trial: the oracle's conversation on a ``bank/v1`` task, one call per assistant turn (the
conversation so far, the seven tool schemas). Two arms, interleaved round by round (ABAB...) so
that machine load hits both alike:

- ``litellm``: ``litellm.acompletion`` with the messages already in OpenAI shape and the same
  keyword arguments our adapter passes: litellm's own cost (request build, HTTP, response parse,
  its cost/logging callbacks);
- ``apiflow``: ``LiteLLMClient.generate`` on the schema-1.0 conversation through the grid's retry
  layer (``retry_hook``), then the priced cost of the call: conversion, kwargs, replay state, usage
  reading, output parsing, price;
- ``ours-only``: the same as ``apiflow`` with litellm taken out: the retry layer's attempt returns
  the response litellm gave for that point in the ``litellm`` arm. litellm's CPU per call (several
  ms) varies by more than our whole part between rounds on a loaded machine, so this arm measures
  our part directly; ``apiflow - litellm`` is the cross-check.

Process CPU per call, median of rounds (target: ours ≤ 0.5 ms per call).

    python bench/bench_provider.py [--calls 200] [--rounds 7] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from apiflow.agent import TrialSpec  # noqa: E402
from apiflow.bank import load_bank  # noqa: E402
from apiflow.models import GenerateConfig, make_model  # noqa: E402
from apiflow.models.chat_messages import to_openai_messages  # noqa: E402
from apiflow.models.litellm_client import LiteLLMClient, _litellm, configure_litellm  # noqa: E402
from apiflow.models.retry import retry_hook  # noqa: E402
from apiflow.results.prices import cost_usd, load_price_table  # noqa: E402
from apiflow.runner import play_trial_sync  # noqa: E402
from apiflow.tools.schemas import tool_schemas  # noqa: E402
from cluster.chaos.kit import _wait_http, free_port  # noqa: E402

BANK = ROOT / "bank" / "v1"
TASK = "v1-w03-chain-1to04"
"""A chain whose oracle trial makes 12 model calls (the trial bench_trial.py measures)."""
MODEL = "openai/apiflow/oracle"
"""litellm's ``openai/`` route; the stand-in plays the offline oracle for it."""


class Standin:
    """The stand-in in a child process (its CPU is not ours), stopped by its own pid."""

    def __init__(self, plays: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.plays = plays
        """``NAME=MODEL`` pairs: a model id litellm's cost map knows, answered by an offline model."""
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> str:
        cmd = [
            sys.executable,
            "-m",
            "apiflow.testing.standin_server",
            "--bank",
            str(BANK),
            "--port",
            str(self.port),
            *(arg for play in self.plays for arg in ("--play", play)),
        ]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{self.port}/v1"
        _wait_http(f"{url}/models", 120)
        return url

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def conversation_points(task_id: str | None) -> tuple[str, list[list[dict[str, Any]]]]:
    """The oracle's trial on a ``bank/v1`` task: the conversation before each assistant turn."""
    bank = load_bank(BANK)
    task = bank.task(task_id or TASK)
    record = play_trial_sync(
        TrialSpec(
            task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
            run_id="bench", model_slug="apiflow-oracle",
        ),
        make_model("apiflow/oracle", task, 0),
    )
    messages = record.messages
    return task.id, [messages[:i] for i, m in enumerate(messages) if m["role"] == "assistant"]


def arms(url: str, points: list[list[dict[str, Any]]]) -> dict[str, Callable[[int], Awaitable[None]]]:
    """``name -> run(n)``: n calls of each arm, cycling through the conversation points."""
    litellm = _litellm()
    tools = tool_schemas()
    params = {"api_base": url, "api_key": "sk-local", "timeout": 60}
    config = GenerateConfig(temperature=0.0, max_tokens=1024)
    converted = [to_openai_messages(p, (), "") for p in points]  # litellm alone gets them ready-made
    prices = load_price_table().price("gpt-5-mini")
    hook = retry_hook()

    canned: list[Any] = [None] * len(points)

    async def litellm_alone(n: int) -> None:
        for i in range(n):
            canned[i % len(points)] = await litellm.acompletion(
                max_retries=0, **params, model=MODEL, messages=converted[i % len(points)],
                temperature=0.0, num_retries=0, tools=tools, max_tokens=1024)  # fmt: skip

    async def ours(n: int) -> None:
        client = LiteLLMClient(MODEL, params, hook)
        for i in range(n):
            point = points[i % len(points)]
            if i % len(points) == 0:
                client = LiteLLMClient(MODEL, params, hook)  # one client per trial, as make_model builds
            output = await client.generate(point, tools, config)
            cost_usd(output.usage, prices)

    async def ours_alone(n: int) -> None:
        # Our part with no litellm at all: the retry layer's attempt returns the response litellm
        # returned for this point (recorded by the litellm arm), so what is left is ours.
        async def replayed(attempt: Any, log: list[dict[str, Any]]) -> Any:
            return await hook(lambda: _ready(canned[i % len(points)]), log)

        client = LiteLLMClient(MODEL, params, replayed)
        for i in range(n):
            if i % len(points) == 0:
                client = LiteLLMClient(MODEL, params, replayed)
            output = await client.generate(points[i % len(points)], tools, config)
            cost_usd(output.usage, prices)

    return {"litellm": litellm_alone, "apiflow": ours, "ours-only": ours_alone}


async def _ready(value: Any) -> Any:
    return value


async def measure(run: Callable[[int], Awaitable[None]], n: int) -> float:
    """Process CPU seconds per call of ``n`` calls (all rounds share one event loop, as a worker does)."""
    started = time.process_time()
    await run(n)
    return (time.process_time() - started) / n


async def rounds(runs: dict[str, Callable[[int], Awaitable[None]]], calls: int, count: int, warm: int,
                 profile: bool) -> dict[str, list[float]]:  # fmt: skip
    for run in runs.values():  # warm-up: imports, connection pool, litellm's lazy tables
        await measure(run, warm)
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        await measure(runs["ours-only"], calls)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
        return {}
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(count):
        for name, run in runs.items():
            samples[name].append(await measure(run, calls))
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/bench_provider.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--calls", type=int, default=200, help="calls per arm per round (default 200)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--task", help=f"bank/v1 task id (default {TASK}: 12 calls)")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile one round of the ours-only arm instead"
    )
    args = parser.parse_args(argv)
    if args.calls < 1 or args.rounds < 1:
        parser.error("--calls and --rounds must be at least 1")
    configure_litellm()
    task_id, points = conversation_points(args.task)
    with Standin() as url:
        samples = asyncio.run(rounds(arms(url, points), args.calls, args.rounds, len(points), args.profile))
    if not samples:
        return 0
    median = {name: statistics.median(values) for name, values in samples.items()}
    ours_only = samples["ours-only"]
    extra = median["apiflow"] - median["litellm"]
    per_round = [a - b for a, b in zip(samples["apiflow"], samples["litellm"], strict=True)]
    print(f"task {task_id}: {len(points)} calls per trial; {args.calls} calls x {args.rounds} rounds per arm; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for name, values in samples.items():
        print(f"  {name:8s} CPU/call median {median[name] * 1e3:.3f} ms  "
              f"(min {min(values) * 1e3:.3f}, max {max(values) * 1e3:.3f})")  # fmt: skip
    print(f"  ours on top of litellm: {extra * 1e3:.3f} ms/call median "
          f"(per round {min(per_round) * 1e3:.3f}..{max(per_round) * 1e3:.3f}); "
          f"ratio {median['apiflow'] / median['litellm']:.3f}")  # fmt: skip
    print(f"  ours measured alone: {median['ours-only'] * 1e3:.3f} ms/call median "
          f"(spread {min(ours_only) * 1e3:.3f}..{max(ours_only) * 1e3:.3f}); target <= 0.5 ms: "
          f"{'met' if median['ours-only'] <= 5e-4 else 'NOT met'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
