"""Harness CPU per tool call, apiflow against Inspect AI, measured side by side (issue 11 §1).

One command: ``.venv/bin/python bench/bench_vs_inspect.py [--trials N] [--rounds R]``
(needs ``inspect_ai``, pinned at 0.3.285 in the dev environment).

Both sides play the same scripted 12-call trials: the ``bank/v1`` tasks whose golden path is
12 tool calls (13 model calls), one call per model turn, then a final answer.

* **apiflow**: ``run_trial`` with ``apiflow/oracle``, graded, as ``apiflow run`` runs it
  (world, workspace, the seven tools, canaries, intake, record, G1/G2 grading).
* **Inspect**: ``eval()`` of a ``Task`` whose samples carry the same user message, solved by
  ``react(submit=False)`` with seven tools of the same names and parameters, and the
  ``mockllm`` model scripted (a ``custom_outputs`` callable) to make the same calls with the
  same arguments. The tools return the result strings apiflow's own trial returned, looked
  up by arguments, so Inspect does no world work at all: its side is a lower bound. Scored by
  ``includes()`` against one card value. Lightest logging found in 0.3.285:
  ``display="none"``, ``log_samples=False``, ``log_realtime=False``, ``log_model_api=False``,
  ``log_images=False``, ``score_display=False``, ``trace=False``, ``log_level="error"`` and a
  temporary ``log_dir`` (``eval()`` always writes the log header; with ``log_samples=False``
  that file holds no samples).

CPU is ``time.process_time`` (this process; both run in one event loop, no subprocesses).
Per tool call = the *marginal* CPU: (CPU of 2N trials - CPU of N trials) / (N x 12), which
removes each side's fixed start-up (Inspect's eval set-up and log file; our bank load is done
before timing). Rounds alternate the sides; the median round is reported with the spread.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("INSPECT_DISPLAY", "none")

from bench_trial import pick_tasks  # noqa: E402
from trialkit import trial_kwargs  # noqa: E402  # bench/ is on sys.path as the script's folder

from apiflow.agent import TrialSpec, trial_seed  # noqa: E402
from apiflow.agent.prompts import user_message  # noqa: E402
from apiflow.bank import Bank, load_bank  # noqa: E402
from apiflow.bank.task import Task  # noqa: E402
from apiflow.models import make_model  # noqa: E402
from apiflow.runner import play_trial  # noqa: E402

TARGET_RATIO = 50.0
TOOL_CALLS = 12


def twelve_call_tasks(bank: Bank) -> list[Task]:
    """The tasks whose golden path is exactly 12 tool calls (those ``bench_trial.py`` plays)."""
    tasks = pick_tasks(bank, TOOL_CALLS)
    assert all(sum(len(s.calls) for s in t.golden) == TOOL_CALLS for t in tasks), "no 12-call task"
    return tasks


def _ours_kwargs(bank: Bank, epoch: int) -> dict[str, Any]:
    return trial_kwargs(bank, None, epoch)  # type: ignore[arg-type]  # the task is not used


async def _ours(bank: Bank, tasks: list[Task], n: int) -> None:
    for i in range(n):
        task = tasks[i % len(tasks)]
        model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
        record = await play_trial(
            TrialSpec(task=task, world=bank.world_of(task), **_ours_kwargs(bank, 1)), model
        )
        assert record.passed and record.apiflow.tool_calls == TOOL_CALLS, record.failure_reason


class Script:
    """Per task: the user message, the calls the oracle made (name, arguments, result) and its answer."""

    def __init__(self, bank: Bank, tasks: list[Task]) -> None:
        self.turns: dict[str, tuple[list[tuple[str, dict[str, Any]]], str]] = {}
        self.results: dict[str, str] = {}
        self.first_card_value: dict[str, str] = {}
        for task in tasks:
            model = make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))
            record = asyncio.run(
                play_trial(TrialSpec(task=task, world=bank.world_of(task), **_ours_kwargs(bank, 1)), model)
            )
            calls: list[tuple[str, dict[str, Any]]] = []
            answer = ""
            for message in record.messages:
                if message["role"] == "assistant":
                    assert len(message.get("tool_calls") or ()) <= 1, "one call per turn expected"
                    for call in message.get("tool_calls") or ():
                        calls.append((call["name"], call["arguments"]))
                    if not message.get("tool_calls"):
                        answer = "".join(b.get("text", "") for b in message["content"])
                elif message["role"] == "tool":
                    name, arguments = calls[-1]
                    self.results[self.key(name, arguments)] = message["content"]
            prompt = user_message(task)
            self.turns[prompt] = (calls, answer)
            self.first_card_value[prompt] = str(next(iter(task.expected_card.values())))

    @staticmethod
    def key(name: str, arguments: dict[str, Any]) -> str:
        return name + json.dumps({k: v for k, v in arguments.items() if v is not None}, sort_keys=True)


def _inspect_task(script: Script, n: int) -> Any:
    from inspect_ai import Task as InspectTask
    from inspect_ai.agent import react
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.tool import tool

    prompts = list(script.turns)

    def answer(name: str, **arguments: Any) -> str:
        return script.results[Script.key(name, arguments)]

    @tool
    def read() -> Any:
        async def run(entity_ref: dict[str, Any], scope: str | None = None) -> str:
            """Return the full content of one entity.

            Args:
                entity_ref: The entity.
                scope: Its scope.
            """
            return answer("read", entity_ref=entity_ref, scope=scope)

        return run

    @tool
    def write() -> Any:
        async def run(entity_ref: dict[str, Any], content: dict[str, Any], scope: str | None = None) -> str:
            """Create an entity or overwrite it.

            Args:
                entity_ref: The entity.
                content: Its content.
                scope: Its scope.
            """
            return answer("write", entity_ref=entity_ref, content=content, scope=scope)

        return run

    @tool
    def edit() -> Any:
        async def run(entity_ref: dict[str, Any], patch: dict[str, Any]) -> str:
            """Patch an entity.

            Args:
                entity_ref: The entity.
                patch: The patch.
            """
            return answer("edit", entity_ref=entity_ref, patch=patch)

        return run

    @tool
    def search() -> Any:
        async def run(query: str, kind: str | None = None) -> str:
            """Find entities.

            Args:
                query: What to find.
                kind: Entity kind.
            """
            return answer("search", query=query, kind=kind)

        return run

    @tool
    def execute() -> Any:
        async def run(
            request: dict[str, Any] | None = None,
            target: dict[str, Any] | None = None,
            mode: str | None = None,
        ) -> str:
            """Send an HTTP request.

            Args:
                request: The request.
                target: A stored request.
                mode: How to send it.
            """
            return answer("execute", request=request, target=target, mode=mode)

        return run

    @tool
    def clarify() -> Any:
        async def run(question: str) -> str:
            """Ask the user.

            Args:
                question: The question.
            """
            return answer("clarify", question=question)

        return run

    @tool
    def report_blocked() -> Any:
        async def run(reason: str) -> str:
            """Say the task cannot be done.

            Args:
                reason: Why.
            """
            return answer("report_blocked", reason=reason)

        return run

    samples = [
        Sample(
            id=i, input=prompts[i % len(prompts)], target=script.first_card_value[prompts[i % len(prompts)]]
        )
        for i in range(n)
    ]
    tools = [read(), write(), edit(), search(), execute(), clarify(), report_blocked()]
    return InspectTask(dataset=samples, solver=react(tools=tools, submit=False), scorer=includes())


def _mock_model(script: Script) -> Any:
    from inspect_ai.model import ChatMessageUser, ModelOutput, ModelUsage, get_model

    def outputs(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> Any:
        prompt = next(m.text for m in messages if isinstance(m, ChatMessageUser))
        calls, text = script.turns[prompt]
        i = sum(1 for m in messages if m.role == "assistant")
        if i < len(calls):
            name, arguments = calls[i]
            output = ModelOutput.for_tool_call("mockllm", name, arguments, tool_call_id=f"c{i}")
        else:
            output = ModelOutput.from_content("mockllm", text)
        # A usage of our own, as apiflow's offline models estimate theirs: without one, mockllm
        # counts tokens with tiktoken, which would bill Inspect for work apiflow does not do.
        output.usage = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)
        return output

    return get_model("mockllm/model", custom_outputs=outputs)


def _inspect(script: Script, n: int, log_dir: str) -> None:
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval(
        _inspect_task(script, n),
        model=_mock_model(script),
        display="none",
        log_samples=False,
        log_realtime=False,
        log_model_api=False,
        log_images=False,
        score_display=False,
        trace=False,
        log_level="error",
        log_dir=log_dir,
    )
    log = logs[0]
    assert log.status == "success", log.error.message if log.error else log.status
    assert log.results is not None and log.results.total_samples == n
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert accuracy == 1.0, f"Inspect side did not replay the script (accuracy {accuracy})"


def _cpu(fn: Any) -> float:
    # Collect first, outside the timing: otherwise the garbage of the previous measurement (Inspect
    # leaves a lot) is collected inside this one, and a round's N-trial run can cost more than its
    # 2N-trial run (negative marginal CPU, seen in every first round before this).
    gc.collect()
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--trials", type=int, default=60, help="N: trials per side per measurement (default 60)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    bank = load_bank(ROOT / "bank" / "v1")
    tasks = twelve_call_tasks(bank)
    script = Script(bank, tasks)
    n = args.trials
    ours: list[float] = []
    theirs: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-vs-inspect-") as log_dir:
        _inspect(script, 3, log_dir)  # warm imports and registries
        asyncio.run(_ours(bank, tasks, 30))
        for _ in range(args.rounds):
            small = _cpu(lambda: asyncio.run(_ours(bank, tasks, n)))
            big = _cpu(lambda: asyncio.run(_ours(bank, tasks, 2 * n)))
            ours.append((big - small) / (n * TOOL_CALLS))
            small = _cpu(lambda: _inspect(script, n, log_dir))
            big = _cpu(lambda: _inspect(script, 2 * n, log_dir))
            theirs.append((big - small) / (n * TOOL_CALLS))
    ratios = [t / o for t, o in zip(theirs, ours, strict=True)]
    print(
        f"tasks {', '.join(t.id for t in tasks)}: {TOOL_CALLS} tool calls, {TOOL_CALLS + 1} model calls each; "
        f"N={n}, {args.rounds} rounds; load {os.getloadavg()[0]:.2f}"
    )
    med_o, med_t = statistics.median(ours), statistics.median(theirs)
    print(f"apiflow  cpu us/tool call: median {med_o * 1e6:8.1f}  rounds {[round(x * 1e6, 1) for x in ours]}")
    print(
        f"inspect  cpu us/tool call: median {med_t * 1e6:8.1f}  rounds {[round(x * 1e6, 1) for x in theirs]}"
    )
    ratio = statistics.median(ratios)
    print(
        f"ratio inspect/apiflow: median {ratio:.1f}x (rounds {', '.join(f'{r:.1f}' for r in ratios)}) "
        f"vs target >= {TARGET_RATIO:.0f}x -> {'OK' if ratio >= TARGET_RATIO else 'UNDER'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
