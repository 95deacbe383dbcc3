"""A small budget spent on finished trials, balanced across models (issue 25 §4).

    .venv/bin/python bench/bench_budget.py [--cap 3.0] [--epochs 20] [--in-flight 16] [--latency 0.05]

Two models through litellm's real routes to the stand-in provider (which bills Anthropic's prompt
caching as documented): a dear one (``anthropic/claude-sonnet-4-6``) and a cheap one
(``openai/gpt-5-mini``), both played by the offline oracle, over the sample bank's tasks x
``--epochs``, on a private local Ray with ``--in-flight`` trials at once and a ``--cap`` budget that
binds long before the grid ends. Printed: the share of the cap spent, the share of the spend on
trials that stored nothing, the overshoot, and the stored trials per model against the planned
order's share. Goals: >= 95 % of the cap, <= 5 % unstored, both models stored in the plan's
proportion (within 15 %). The script runs unchanged against an older checkout (``PYTHONPATH=<it>``):
that is how the per-call worst-case ledger it replaced was measured (docs/results/issue25-economics.md).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from apiflow.bank import DEFAULT_BANK  # noqa: E402
from apiflow.results.store import ResultStore  # noqa: E402
from apiflow.testing.standin_server import StandinConfig, StandinServer  # noqa: E402
from cluster.driver import run_grid  # noqa: E402
from cluster.spec import GridSpec  # noqa: E402

DEAR, CHEAP = "claude-sonnet-4-6", "gpt-5-mini"


def _spec(server: StandinServer, out: str, cap: float | None, epochs: int, in_flight: int) -> GridSpec:
    return GridSpec.model_validate({
        "name": "budget",
        "bank": str(DEFAULT_BANK),
        "models": [
            {"slug": DEAR, "model": f"anthropic/{DEAR}", "params": {"api_base": server.root, "api_key": "sk-ant-bench"}},
            {"slug": CHEAP, "model": f"openai/{CHEAP}", "params": {"api_base": server.url, "api_key": "sk-bench"}},
        ],
        "epochs": epochs,
        "out": out,
        "budget_usd": cap,
        "price_table": str(ROOT / "configs/prices/2026-12.yaml"),
        "concurrency": {"actors": 1, "trials_per_actor": in_flight},
        "retry": {"max_attempts": 4, "base_s": 0.05, "max_wait_s": 0.5, "max_elapsed_s": 30},
    })  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=3.0, help="budget in USD")
    parser.add_argument("--epochs", type=int, default=20, help="epochs of the sample bank's tasks")
    parser.add_argument("--in-flight", type=int, default=16, help="trials at once")
    parser.add_argument("--latency", type=float, default=0.05, help="the stand-in's seconds per answer")
    args = parser.parse_args(argv)
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    plays = ((DEAR, "apiflow/oracle"), (CHEAP, "apiflow/oracle"))
    with tempfile.TemporaryDirectory() as work:
        server = StandinServer(StandinConfig(plays=plays, latency_s=args.latency))
        server.start()
        try:
            began = time.monotonic()
            capped = _spec(server, str(Path(work) / "capped"), args.cap, args.epochs, args.in_flight)
            summary = run_grid(capped, progress=False)
            seconds = time.monotonic() - began
            store = ResultStore(capped.out)
            rows = store.read_rows().to_pylist()
            failures = store.read_rows(failures=True).to_pylist()
        finally:
            server.stop()
    ledger = summary.ledger or {}
    spent = ledger.get("spent_usd", 0.0)
    stored = collections.Counter(r["model"] for r in rows)
    stored_usd = sum(r["cost_usd"] or 0.0 for r in rows)
    per_model_usd = collections.Counter()
    for r in rows:
        per_model_usd[r["model"]] += r["cost_usd"] or 0.0
    print(f"grid: sample bank x {args.epochs} epochs x 2 models = {summary.planned} trials planned; "
          f"cap ${args.cap:.2f}; {args.in_flight} trials in flight; {seconds:.0f} s")  # fmt: skip
    print(f"  spent ${spent:.4f} = {spent / args.cap:.1%} of the cap (goal >= 95 %); overshoot "
          f"${ledger.get('overshoot_usd', 0.0):.4f}")  # fmt: skip
    unstored = spent - stored_usd
    print(f"  on stored trials ${stored_usd:.4f}; on trials that stored nothing ${unstored:.4f} = "
          f"{unstored / spent if spent else 0:.1%} (goal <= 5 %); failure rows {len(failures)}")  # fmt: skip
    total = sum(stored.values())
    for model in (DEAR, CHEAP):
        print(f"  {model}: {stored[model]} stored ({stored[model] / total if total else 0:.0%}; the plan "
              f"alternates the two: 50 %), ${per_model_usd[model]:.4f}")  # fmt: skip
    balanced = total and abs(stored[DEAR] / total - 0.5) <= 0.15
    ok = spent >= 0.95 * args.cap and (unstored <= 0.05 * spent) and balanced
    print("goals met" if ok else "GOALS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
