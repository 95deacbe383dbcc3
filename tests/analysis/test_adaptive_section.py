"""The report's section on an adaptive run: the sweep's record read from the grid's folder, each
model's outcomes rebuilt from its rows on its prefix of the order, the sequences read there."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from apiflow.analysis.adaptive import unit_order
from apiflow.analysis.adaptive_section import adaptive_section, load_sweep, sweep_summary
from apiflow.analysis.document import Section
from apiflow.analysis.sequential import rate_interval

N = 40
UNITS = [[f"s-w01-sub{t:02d}", 0, e] for e in (1, 2) for t in range(1, 21)]


def record(**changes) -> dict:
    return {
        "question": "better:a,b", "describe": "is a better than b by 0 points, at 90%", "level": 0.9, "joint": True,
        "order_seed": 3, "units": UNITS, "models": ["a", "b"], "counts": {"a": 16, "b": 16}, "waves": [{}, {}],
        "stop": "answered", "halted": "",
    } | changes  # fmt: skip


def table(outcomes: dict[str, np.ndarray], harness_at: tuple[str, int] | None = None) -> pa.Table:
    """One row per (model, position) of ``outcomes`` (in order positions), as a grid stores them."""
    order = unit_order(N, 3)
    rows = []
    for model, values in outcomes.items():
        for k, value in enumerate(values):
            task, seed, epoch = UNITS[order[k]]
            unscored = harness_at == (model, k)
            rows.append({"model": model, "task_id": task, "seed": seed, "epoch": epoch,
                         "passed": None if unscored else bool(value), "harness": unscored})  # fmt: skip
    return pa.Table.from_pylist(rows)


def test_the_sequences_are_read_on_each_models_prefix_of_the_order():
    rng = np.random.default_rng(0)
    a, b = (rng.random(N) < 0.9).astype(float), (rng.random(N) < 0.2).astype(float)
    rows = table({"a": a[:24], "b": b[:16]}, harness_at=("b", 3))  # a's trials past its count: not read
    found = sweep_summary(record(), rows)
    by = {m["model"]: m for m in found["models"]}
    assert by["a"]["n"] == by["b"]["n"] == 16 and by["a"]["population"] == N
    expected = rate_interval(a[:16], N, 0.1)
    assert (by["a"]["low"], by["a"]["high"]) == pytest.approx((expected.low, expected.high))
    b_seen = b[:16].copy()
    b_seen[3] = 0.0  # unscored, final: a failure (051 §3)
    assert by["b"]["estimate"] == pytest.approx(b_seen.mean())
    d = found["difference"]
    assert d["n"] == 16 and d["low"] <= d["estimate"] <= d["high"] and found["verdict"] in ("yes", "open")
    json.dumps(found, allow_nan=False)  # summary.json stays strict JSON


def test_a_prefix_shorter_than_the_record_says_is_cut_to_what_is_stored():
    a = np.ones(N)
    found = sweep_summary(record(counts={"a": 16, "b": 16}), table({"a": a[:10], "b": a[:16]}))
    assert [m["n"] for m in found["models"]] == [10, 16]


def test_the_section_names_the_question_the_stop_and_each_models_interval():
    rng = np.random.default_rng(1)
    found = sweep_summary(record(), table({"a": np.ones(16), "b": (rng.random(16) < 0.1).astype(float)}))
    summary = {"adaptive": found, "pass_rates": {"all": {"worlds": 1, "per_model": [
        {"model": "a", "rate": 1.0, "ci90": None}, {"model": "b", "rate": 0.1, "ci90": None}]}}}  # fmt: skip
    section = adaptive_section(summary)
    assert isinstance(section, Section) and section.title == "Adaptive sweep"
    text = " ".join(section.paragraphs)
    assert "is a better than b" in text and "answered" in text and "seed 3" in text
    rows = {r[0]: r for r in section.tables[0].rows}
    assert rows["a"][1] == "16 of 40" and rows["a"][2].startswith("100.0%") and "[" in rows["a"][3]


def test_the_record_is_the_latest_attempts_of_an_adaptive_grids_folder(tmp_path):
    out = tmp_path / "grid"
    (out / "attempts").mkdir(parents=True)
    assert load_sweep([str(out)]) is None  # no manifest: not a grid
    (out / "manifest.json").write_text("{}")
    assert load_sweep([str(out)]) is None  # a grid with no sweep
    for name, started, stop in [("b", "2026-01-02T00:00:00+00:00", "cap"), ("a", "2026-01-03T00:00:00+00:00", "answered")]:
        (out / "attempts" / f"{name}.json").write_text(json.dumps({"started": started, "adaptive": record(stop=stop)}))
    (out / "attempts" / "c.json").write_text(json.dumps({"started": "2026-01-04T00:00:00+00:00"}))  # a plain run
    found = load_sweep([str(out)])
    assert found is not None and found["stop"] == "answered"
    assert load_sweep([str(out), str(out)]) is None  # several inputs: no one grid's sweep
