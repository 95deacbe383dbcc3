"""The report's section on an adaptive run (docs/design/051 §5): its question, why it stopped, and per
model n and the confidence sequence's interval for the full plan beside the usual rate.

An adaptive grid keeps its sweep's record in its latest attempt object (``attempts/<attempt>.json``,
key ``adaptive``, written by ``cluster.waves``): the question, the units of the plan and the seed of
their order, each model's count and the stop. The section rebuilds each model's outcomes on the
first ``count`` units of that order from the stored rows (an unscored trial, final, as a failure)
and reads the sequences there (``apiflow.analysis.adaptive``): valid for the full plan's rate
whenever the sweep stopped. The world bootstrap's interval stays where the leaderboard shows it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from apiflow.analysis.adaptive import assess, difference, parse_question, paths, unit_order
from apiflow.analysis.document import Section, Table, pct, pct_ci
from apiflow.errors import UsageError
from apiflow.results.store import ResultStore

RECORD_KEY = "adaptive"
"""The attempt object's key holding a sweep's record."""

STOPS = {
    "answered": "answered: the question is settled at its level",
    "cap": "cap: not one more wave fits the grid's budget (expected cost); the question is still open",
    "exhausted": "exhausted: the open models ran every unit of the plan",
    "": "not stopped: the run ended before its question was settled (rerun to continue)",
}


def latest_record(store: ResultStore) -> dict[str, Any] | None:
    """The sweep record of the grid's latest attempt that ran one (None: not an adaptive grid)."""
    found = []
    for path in store.objects.list("attempts", ".json"):
        try:
            info = json.loads(store.objects.cat(path))
        except (FileNotFoundError, ValueError):
            continue
        if isinstance(info, dict) and isinstance(info.get(RECORD_KEY), dict):
            found.append((str(info.get("started", "")), path, info[RECORD_KEY]))
    return max(found, key=lambda f: (f[0], f[1]))[2] if found else None


def load_sweep(inputs: Sequence[str], storage_options: dict | None = None) -> dict[str, Any] | None:
    """The sweep record of the report's input when it is one adaptive grid's folder, else None."""
    if len(inputs) != 1:
        return None
    source = str(inputs[0])
    if "://" not in source and not (Path(source) / "manifest.json").is_file():
        return None
    try:
        store = ResultStore(source, storage_options)
        return latest_record(store) if store.read_manifest() is not None else None
    except (OSError, UsageError, ValueError):
        return None


def sweep_summary(record: dict[str, Any], table: pa.Table) -> dict[str, Any]:
    """The section's numbers (JSON-ready): per model n and its interval, the pairs settled, the stop."""
    units = [tuple(u) for u in record["units"]]
    models = list(record["models"])
    population = len(units)
    order = unit_order(population, int(record["order_seed"]))
    position = {units[int(i)]: k for k, i in enumerate(order)}
    index = {slug: m for m, slug in enumerate(models)}
    x = np.full((len(models), population), np.nan)
    wanted = ["model", "task_id", "seed", "epoch", "passed", "harness"]
    for row in table.select([c for c in wanted if c in table.column_names]).to_pylist():
        m = index.get(row["model"])
        k = position.get((row["task_id"], row.get("seed"), row["epoch"]))
        if m is not None and k is not None:
            x[m, k] = 1.0 if row["passed"] and not row.get("harness") else 0.0
    unresolved = np.isnan(x)
    prefix = np.where(unresolved.any(axis=1), unresolved.argmax(axis=1), population)
    counts = np.minimum([int(record["counts"].get(s, 0)) for s in models], prefix).astype(np.int64)
    question = parse_question(record["question"], float(record["level"]), bool(record["joint"]))
    alpha_rate, alpha_pair = question.alphas(len(models))
    seen = np.nan_to_num(x[:, : max(int(counts.max(initial=0)), 1)])
    sequences = paths(seen, population, alpha_rate, alpha_pair)
    found = assess(question, models, sequences, counts)
    per_model = [
        {"model": slug, "n": int(counts[m]), "population": population, "open": bool(found.open_models[m]),
         **{k: _num(v) for k, v in found.rates[m].as_dict().items() if k in ("low", "high", "estimate")},
         "rank_low": int(found.rank_low[m]), "rank_high": int(found.rank_high[m])}
        for m, slug in enumerate(models)
    ]  # fmt: skip
    pairs = []
    for a in range(len(models)):
        for b in range(a + 1, len(models)):
            above = models[a] if found.above[a, b] else models[b] if found.above[b, a] else None
            pairs.append({"a": models[a], "b": models[b], "separated": bool(found.separated[a, b]), "above": above})
    out = {
        "question": record["question"], "describe": record.get("describe") or question.describe(),
        "kind": question.kind, "level": question.level, "joint": question.joint, "stop": record.get("stop", ""),
        "halted": record.get("halted", ""), "verdict": found.verdict, "answered": found.answered,
        "order_seed": int(record["order_seed"]), "population": population,
        "waves": len(record.get("waves", [])), "models": per_model, "pairs": pairs,
        "open": [slug for slug, wanted in zip(models, found.open_models, strict=True) if wanted],
    }  # fmt: skip
    if question.kind == "better":
        a, b = models.index(question.pair[0]), models.index(question.pair[1])
        diff = difference(sequences, counts, a, b)
        out["difference"] = {"a": models[a], "b": models[b], "margin": question.margin,
                             **{k: _num(v) for k, v in diff.as_dict().items()}}  # fmt: skip
    return out


def _num(value: Any) -> Any:
    """JSON has no NaN: an estimate of nothing is null."""
    return None if isinstance(value, float) and np.isnan(value) else value


def adaptive_section(s: dict[str, Any]) -> Section:
    """The section of ``summary["adaptive"]`` (``sweep_summary``), the usual rate beside each interval."""
    a = s["adaptive"]
    level = f"{a['level']:.0%}" + ("" if a.get("kind") == "better" else " jointly" if a["joint"] else " each")
    rates = {m["model"]: m for m in s.get("pass_rates", {}).get("all", {}).get("per_model", [])}
    worlds = s.get("pass_rates", {}).get("all", {}).get("worlds")
    settled = sum(p["separated"] for p in a["pairs"])
    text = [
        f"This grid ran as an adaptive sweep (docs/design/051): {a['describe']}. Every model ran a prefix of "
        f"one random order of the plan's {a['population']} (task, epoch) units (seed {a['order_seed']}); "
        f"the last run's {a['waves']} waves ended {STOPS.get(a['stop'], a['stop'])}"
        + (f" ({a['halted']})" if a["halted"] else "") + f". Verdict: {a['verdict']}.",
        "n is the units a model ran. The anytime interval bounds the rate the full plan would give (an "
        f"unscored trial as a failure), at {level}, whenever the sweep stopped; the pass rate beside it is "
        "the leaderboard's, over the stored trials, with the world bootstrap's interval (what other worlds "
        "would say). A rate read at a data-chosen stop can carry a small optional-stopping bias (051 §5).",
        f"Pairs separated at that level: {settled} of {len(a['pairs'])}. "
        + ("Still open: " + ", ".join(a["open"]) + "." if a["open"] else "Nothing is left open."),
    ]
    if "difference" in a:
        d = a["difference"]
        band = "—"
        if d["estimate"] is not None:
            band = f"{100 * d['estimate']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]"
        text.append(f"{d['a']} − {d['b']}: {band} points over their {d['n']} common units (margin "
                    f"{100 * d['margin']:g}).")  # fmt: skip
    header = ["model", "n of N", "pass rate [90% CI, worlds]", f"full-plan rate [{level}, anytime]", "rank", "open"]
    rows = []
    for m in sorted(a["models"], key=lambda m: (m["rank_low"], -(m["estimate"] or 0))):
        usual = pct_ci(rates[m["model"]], worlds=worlds) if m["model"] in rates else "—"
        sequence = "—" if not m["n"] else f"{pct(m['estimate'])} [{100 * m['low']:.1f}, {100 * m['high']:.1f}]"
        ranks = str(m["rank_low"]) if m["rank_low"] == m["rank_high"] else f"{m['rank_low']}–{m['rank_high']}"
        n = f"{m['n']} of {m['population']}"
        rows.append([m["model"], n, usual, sequence, ranks, "yes" if m["open"] else ""])
    return Section("Adaptive sweep", text, [Table(header, rows)])
