"""Issue 25: what litellm's own settings save of the provider path's CPU per model call.

The same path and stand-in as bench/bench_provider.py's ``apiflow`` arm (``LiteLLMClient.generate``
through the retry layer, then the priced cost; the stand-in in its own process, so this process's
CPU is the client side only, litellm included), once per arm, the arms interleaved round by round
in a rotating order (a loaded 2-core machine hits them alike, and no arm always runs after the
same one). Each arm is the current adapter (``configure_litellm()``) plus one litellm setting:

- ``current again``: the current adapter a second time, so the A/A difference shows the noise floor;
- settings litellm 1.110.2 has, that apiflow could adopt: module flags, per-call kwargs, the
  HTTP transport, and ``tuned``, which combines those that lose nothing;
- two ceilings that are no setting (1.110.2 has none for them), patched in only to price what they
  cost: litellm's per-call cost calculation and its success-logging task. A ceiling is the most a
  future litellm switch could save, not something to adopt by patching litellm's internals.

Each arm's window ends when litellm's logging worker has drained the success-logging tasks its calls
queued, so that work is charged to the arm that caused it. Every arm's outputs (text, reasoning,
tool calls, usage, served model) are checked against the current arm's, call for call, and every
arm's request bodies (as handed to the OpenAI SDK, one untimed trial) against the current one's:
a setting that changes either loses something. ``provider_cost_usd`` (litellm's cost, kept as a
cross-check) is compared separately, as the cost-calculation ceiling drops it by design.

Process CPU per call, median of rounds, and each arm's median of per-round differences against
the current arm (the paired figure; machine load moves both arms of a round together).

``--count`` counts Python function calls per model call instead. Load does not move that count, so it
tells a real effect from noise when the CPU differences are within the A/A noise.

    python bench/bench_litellm_settings.py [--calls 200] [--rounds 7] [--model openai/gpt-4.1-mini] [--count]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from bench_provider import BANK, Standin, conversation_points  # noqa: E402

from apiflow.models import GenerateConfig  # noqa: E402
from apiflow.models.base import ModelOutput  # noqa: E402
from apiflow.models.litellm_client import LiteLLMClient, _litellm, configure_litellm  # noqa: E402
from apiflow.models.retry import retry_hook  # noqa: E402
from apiflow.results.prices import cost_usd, load_price_table  # noqa: E402
from apiflow.tools.schemas import tool_schemas  # noqa: E402

ORACLE = "openai/apiflow/oracle"
"""bench_provider.py's model id: unknown to litellm's cost map (its cost comes back None)."""
UNDO = Callable[[], None]


@dataclass(frozen=True)
class Arm:
    """One configuration: ``apply()`` sets it and returns its undo; ``params`` go to every call."""

    name: str
    does: str
    apply: Callable[[], UNDO] = lambda: lambda: None
    params: dict[str, Any] = field(default_factory=dict)
    ceiling: bool = False
    """No setting: litellm patched to measure what the work costs (never to adopt)."""


def _flags(**values: Any) -> Callable[[], UNDO]:
    """Module-level litellm flags, restored afterwards (the arms share one process)."""

    def apply() -> UNDO:
        litellm = _litellm()
        before = {name: getattr(litellm, name) for name in values}
        for name, value in values.items():
            setattr(litellm, name, value)

        def undo() -> None:
            for name, value in before.items():
                setattr(litellm, name, value)

        return undo

    return apply


def _no_cost() -> UNDO:
    # litellm prices every response (``_hidden_params["response_cost"]``) in its wrapper, and its
    # success handler reuses that figure; no 1.110.2 flag turns it off.
    from litellm.litellm_core_utils.litellm_logging import Logging

    original = Logging.response_cost_calculator
    Logging.response_cost_calculator = lambda self, *args, **kwargs: None  # type: ignore[method-assign]
    return lambda: setattr(Logging, "response_cost_calculator", original)


def _no_success_log() -> UNDO:
    # Every call queues an async success handler (standard logging payload, hidden params, usage
    # transforms) on litellm's logging worker, with or without callbacks; no 1.110.2 flag skips it.
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    GLOBAL_LOGGING_WORKER.ensure_initialized_and_enqueue = lambda async_coroutine: async_coroutine.close()  # type: ignore[method-assign]
    return lambda: delattr(GLOBAL_LOGGING_WORKER, "ensure_initialized_and_enqueue")


def _both(*applies: Callable[[], UNDO]) -> Callable[[], UNDO]:
    def apply() -> UNDO:
        undos = [a() for a in applies]

        def undo() -> None:
            for each in reversed(undos):
                each()

        return undo

    return apply


ARMS: tuple[Arm, ...] = (
    Arm("current", "configure_litellm() as it is"),
    Arm("current again", "the same as current: the noise floor (an A/A pair)"),
    Arm(
        "turn_off_message_logging",
        "redacts messages/response in logging payloads",
        _flags(turn_off_message_logging=True),
    ),
    Arm(
        "disable_streaming_logging",
        "skips per-chunk logging of streamed calls",
        _flags(disable_streaming_logging=True),
    ),
    Arm("no-log", "per-call kwarg: callbacks skip this request", params={"no-log": True}),
    Arm(
        "httpx transport",
        "disable_aiohttp_transport: httpx's transport instead of aiohttp's",
        _flags(disable_aiohttp_transport=True),
        params={"api_key": "sk-local-httpx"},
    ),
    Arm(
        "custom pricing kwargs",
        "per-call input/output_cost_per_token: litellm prices at our rates (gpt-5-mini's)",
        params={
            "input_cost_per_token": 0.25e-6,
            "output_cost_per_token": 2.0e-6,
            "cache_read_input_token_cost": 0.025e-6,
        },
    ),
    Arm(
        "tuned (the no-loss ones)",
        "disable_streaming_logging and no-log together: every setting that loses nothing",
        _flags(disable_streaming_logging=True),
        params={"no-log": True},
    ),
    Arm(
        "ceiling: no cost calc",
        "litellm's response_cost (provider_cost_usd) not computed",
        _no_cost,
        ceiling=True,
    ),
    Arm("ceiling: no success log", "litellm's async success handler not run", _no_success_log, ceiling=True),
    Arm("ceiling: both", "neither", _both(_no_cost, _no_success_log), ceiling=True),
)
"""The httpx arm's own ``api_key`` gives it its own cached SDK client: litellm picks the transport
when it builds a client, and caches clients by key, base URL and timeout."""


@dataclass
class Runner:
    url: str
    model: str
    points: list[list[dict[str, Any]]]
    outputs: dict[str, list[ModelOutput]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tools = tool_schemas()
        self.config = GenerateConfig(temperature=0.0, max_tokens=1024)
        self.prices = load_price_table().price("gpt-5-mini")
        self.hook = retry_hook()

    def params(self, arm: Arm) -> dict[str, Any]:
        return {"api_base": self.url, "api_key": "sk-local", "timeout": 60, **arm.params}

    async def calls(self, arm: Arm, n: int, keep: list[ModelOutput] | None) -> None:
        """n calls of the adapter, one client per trial as make_model builds."""
        params = self.params(arm)
        client = LiteLLMClient(self.model, params, self.hook)
        for i in range(n):
            if i % len(self.points) == 0:
                client = LiteLLMClient(self.model, params, self.hook)
            output = await client.generate(self.points[i % len(self.points)], self.tools, self.config)
            cost_usd(output.usage, self.prices)
            if keep is not None:
                keep.append(output)

    async def measure(self, arm: Arm, n: int) -> float:
        """Process CPU seconds per call, the logging tasks the calls queued included."""
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        await drain(GLOBAL_LOGGING_WORKER)  # the previous arm's tail is not ours
        undo = arm.apply()
        try:
            started = time.process_time()
            await self.calls(arm, n, self.outputs.setdefault(arm.name, []))
            await drain(GLOBAL_LOGGING_WORKER)
            return (time.process_time() - started) / n
        finally:
            undo()

    async def bodies(self, arm: Arm) -> list[dict[str, Any]]:
        """The request bodies one trial sends under ``arm`` (untimed): what reaches the SDK."""
        from litellm.llms.openai.openai import OpenAIChatCompletion

        sent: list[dict[str, Any]] = []
        original = OpenAIChatCompletion.make_openai_chat_completion_request

        async def spy(
            self_: Any, openai_aclient: Any, data: dict[str, Any], *args: Any, **kwargs: Any
        ) -> Any:
            sent.append(copy.deepcopy(data))
            return await original(self_, openai_aclient, data, *args, **kwargs)

        OpenAIChatCompletion.make_openai_chat_completion_request = spy  # type: ignore[method-assign]
        undo = arm.apply()
        try:
            await self.calls(arm, len(self.points), None)
        finally:
            undo()
            OpenAIChatCompletion.make_openai_chat_completion_request = original  # type: ignore[method-assign]
        return sent

    async def count(self, arm: Arm, n: int) -> float:
        """Python function calls per model call (every thread: litellm builds the request in an executor).

        Load does not move it, so a setting that leaves it unchanged provably does no less work.
        """
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

        await drain(GLOBAL_LOGGING_WORKER)
        counter = itertools.count()

        def tick(frame: Any, event: str, arg: Any) -> None:
            if event == "call":
                next(counter)  # atomic under the GIL, from either thread

        undo = arm.apply()
        try:
            threading.setprofile(tick)
            sys.setprofile(tick)
            start = next(counter)
            await self.calls(arm, n, None)
            await drain(GLOBAL_LOGGING_WORKER)
            return (next(counter) - start - 1) / n
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
            undo()


async def drain(worker: Any) -> None:
    for _ in range(3):  # the enqueue itself runs in a task spawned by the call
        await asyncio.sleep(0)
    await worker.flush()


def _seen(output: ModelOutput) -> tuple[Any, ...]:
    """What apiflow keeps of a call, less the per-request id and litellm's cost."""
    return output.text, output.reasoning, output.tool_calls, output.usage, (output.served or ())[:2]


async def run(
    runner: Runner, arms: tuple[Arm, ...], calls: int, rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[dict[str, Any]]]]:
    """Per-arm CPU per call of each round, and per-arm request bodies (on one loop: clients are loop-bound)."""
    for arm in arms:  # warm-up: clients, connection pools, litellm's lazy tables
        await runner.measure(arm, len(runner.points))
    runner.outputs.clear()
    samples: dict[str, list[float]] = {arm.name: [] for arm in arms}
    for r in range(rounds):
        for arm in arms[r % len(arms) :] + arms[: r % len(arms)]:  # rotate: no fixed neighbour
            samples[arm.name].append(await runner.measure(arm, calls))
    return samples, {arm.name: await runner.bodies(arm) for arm in arms}


async def counts(runner: Runner, arms: tuple[Arm, ...], calls: int) -> dict[str, float]:
    for arm in arms:
        await runner.measure(arm, len(runner.points))
    return {arm.name: await runner.count(arm, calls) for arm in arms}


def defaults() -> dict[str, Any]:
    """Settings that cost CPU when on, as this process has them (they are already off)."""
    litellm = _litellm()
    names = ("callbacks", "success_callback", "_async_success_callback", "input_callback", "failure_callback",
             "_async_failure_callback", "service_callback", "set_verbose", "cache", "modify_params", "max_budget",
             "return_response_headers", "log_raw_request_response", "turn_off_message_logging")  # fmt: skip
    return {name: getattr(litellm, name, "absent") for name in names} | {
        "telemetry": getattr(litellm, "telemetry", "absent"),
        "logging (read by nothing in 1.110.2)": litellm.logging,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/bench_litellm_settings.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--calls", type=int, default=200, help="calls per arm per round (default 200)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--model", default=ORACLE,
                        help=f"litellm model id (default {ORACLE}); another openai/ id is played by the oracle")  # fmt: skip
    parser.add_argument("--count", action="store_true",
                        help="count Python function calls per model call instead (load-independent; --calls of them)")  # fmt: skip
    parser.add_argument("--arms", help="comma-separated arm names (default: all; current is always run)")
    args = parser.parse_args(argv)
    if args.calls < 1 or args.rounds < 1:
        parser.error("--calls and --rounds must be at least 1")
    arms = ARMS
    if args.arms:
        wanted = {"current", *args.arms.split(",")}
        arms = tuple(arm for arm in ARMS if arm.name in wanted)
        if len(arms) != len(wanted):
            parser.error(f"unknown arm in {sorted(wanted)}; arms: {[a.name for a in ARMS]}")
    configure_litellm()
    _, points = conversation_points(None)
    name = args.model.split("/", 1)[1]
    plays = () if args.model == ORACLE else (f"{name}=apiflow/oracle",)
    with Standin(plays) as url:
        runner = Runner(url, args.model, points)
        if args.count:
            per_call = asyncio.run(counts(runner, arms, args.calls))
            print(f"model {args.model}: Python function calls per model call, {args.calls} calls per arm")
            for arm in arms:
                print(f"  {arm.name:26s} {per_call[arm.name]:8.0f} "
                      f"({per_call[arm.name] - per_call['current']:+.0f} vs current); {arm.does}")  # fmt: skip
            return 0
        samples, bodies = asyncio.run(run(runner, arms, args.calls, args.rounds))
    print(f"model {args.model}; {len(points)} calls per trial; {args.calls} calls x {args.rounds} rounds per arm; "
          f"load {os.getloadavg()[0]:.1f}; bank {BANK.name}")  # fmt: skip
    print("  already off: " + ", ".join(f"{k}={v!r}" for k, v in defaults().items()))
    base = samples["current"]
    reference = runner.outputs["current"]
    for arm in arms:
        values = samples[arm.name]
        saved = [b - v for b, v in zip(base, values, strict=True)]
        outputs = runner.outputs[arm.name]
        same = len(outputs) == len(reference) and all(
            _seen(a) == _seen(b) for a, b in zip(outputs, reference, strict=True)
        )
        cost_same = all(
            a.provider_cost_usd == b.provider_cost_usd for a, b in zip(outputs, reference, strict=True)
        )
        body_same = bodies[arm.name] == bodies["current"]
        print(f"  {arm.name:26s} CPU/call {statistics.median(values) * 1e3:6.3f} ms "
              f"(min {min(values) * 1e3:.3f}, max {max(values) * 1e3:.3f}); "
              f"saved vs current {statistics.median(saved) * 1e3:+.3f} ms/call "
              f"(rounds {min(saved) * 1e3:+.3f}..{max(saved) * 1e3:+.3f}); "
              f"outputs {'same' if same else 'DIFFER'}, bodies {'same' if body_same else 'DIFFER'}, "
              f"provider_cost_usd {'same' if cost_same else 'lost/changed'} "
              f"(e.g. {outputs[0].provider_cost_usd!r}); {arm.does}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
