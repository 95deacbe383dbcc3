"""What a leaderboard costs, and how far the dry-run estimate can be trusted (issue 25).

    .venv/bin/python bench/bench_bill.py [--grid configs/grids/leaderboard.yaml]

1. Held-out estimate. The published trials (``configs/panels/published-trials.parquet``) are split by
   task into two halves (sha256 of the task id); a token profile fitted on one half estimates the
   other half's trials of each model from their kind and length, priced by the grid's table, and the
   other way round. Printed per model: the estimate, the published tokens priced by the same table,
   the error, and whether the published figure fell inside the 90 % interval. Goal: every model of
   the panel within +-25 %, the total within +-10 %.
2. A model the corpus lacks. Each model in turn is left out of the fit and estimated from the panel
   fallback: the error, and whether the interval holds it.
3. The bill. The grid's planned trials (bank x epochs x models) estimated under the grid's own
   caching settings, against the same trials with the published runs' caching (the baseline), and
   against the same grid with caching off everywhere it must be asked for (what the grid cost before
   it asked). Goal: ratio to the published caching <= 1.05.
4. The caching the bill assumes, played. ``--standin N`` sample-bank oracle trials as
   claude-sonnet-4-6 through litellm's real Anthropic route and the stand-in provider (which bills
   caching as Anthropic documents it), with the grid's default caching and with it off: the share of
   prompt tokens read from cache, against the published Claude trials' share, and the cost ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from apiflow.analysis.token_profile import TokenProfile, estimate, published_cost, published_rows  # noqa: E402
from apiflow.bank import load_bank  # noqa: E402
from apiflow.models.caching import caches_prompt, marks_breakpoints  # noqa: E402
from apiflow.results.prices import PriceTable, load_price_table  # noqa: E402
from apiflow.results.taskid import parse_task_id  # noqa: E402
from cluster.spec import load_grid  # noqa: E402


def _half(task_id: str) -> int:
    return hashlib.sha256(task_id.encode()).digest()[0] & 1


def _priced(table: PriceTable, model: str) -> Any:
    return table.price(model) if table.has(model) else None


def held_out(rows: list[dict[str, Any]], table: PriceTable) -> None:
    halves = [[r for r in rows if _half(r["task_id"]) == h] for h in (0, 1)]
    profiles = [TokenProfile.fit(halves[1]), TokenProfile.fit(halves[0])]  # fitted on the other half
    by_model: dict[str, list[list[dict[str, Any]]]] = defaultdict(lambda: [[], []])
    for h, half in enumerate(halves):
        for r in half:
            by_model[r["model"]][h].append(r)
    print("1. held-out estimate (fit on one half of the tasks, estimate the other; both ways)")
    print(f"   {'model':28} {'estimate':>10} {'published':>10} {'error':>8}  90% interval")
    worst, total_est, total_pub, inside = 0.0, 0.0, 0.0, 0
    for model in sorted(by_model):
        prices = _priced(table, model)
        if prices is None:
            print(f"   {model:28} (no price in table {table.version}: skipped)")
            continue
        est = low = high = pub = 0.0
        for h in (0, 1):
            part = by_model[model][h]
            e = estimate(profiles[h], model, [(r["kind"], r["length"]) for r in part], prices)
            est, low, high = est + e.usd, low + e.low, high + e.high
            pub += published_cost(part, prices)
        error = est / pub - 1
        worst = max(worst, abs(error))
        total_est, total_pub = total_est + est, total_pub + pub
        held = low <= pub <= high
        inside += held
        print(f"   {model:28} {est:10.2f} {pub:10.2f} {error:+8.1%}  [{low:.2f}, {high:.2f}] {'holds' if held else 'MISSES'}")
    print(f"   total {total_est:,.2f} vs {total_pub:,.2f}: {total_est / total_pub - 1:+.1%}; "
          f"worst model {worst:.1%}; interval holds {inside} of {len(by_model)}")  # fmt: skip


def left_out(rows: list[dict[str, Any]], table: PriceTable) -> None:
    print("2. a model the corpus lacks (fit without it; panel fallback)")
    models = sorted({r["model"] for r in rows})
    errors, inside = [], 0
    for model in models:
        prices = _priced(table, model)
        if prices is None:
            continue
        profile = TokenProfile.fit(r for r in rows if r["model"] != model)
        mine = [r for r in rows if r["model"] == model]
        e = estimate(profile, f"unknown/{model}", [(r["kind"], r["length"]) for r in mine], prices)
        pub = published_cost(mine, prices)
        errors.append(e.usd / pub - 1)
        inside += e.low <= pub <= e.high
    errors.sort(key=abs)
    print(f"   {len(errors)} models: median |error| {abs(errors[len(errors) // 2]):.0%}, worst {errors[-1]:+.0%}; "
          f"the interval holds {inside} of {len(errors)}")  # fmt: skip


def bill(rows: list[dict[str, Any]], table: PriceTable, grid: Path) -> None:
    spec = load_grid(grid)
    bank = load_bank(ROOT / spec.bank if not Path(spec.bank).is_absolute() else spec.bank)
    selected = list(bank.tasks)
    places = [(parse_task_id(t).kind, parse_task_id(t).length) for t in selected] * spec.epochs
    profile = TokenProfile.fit(rows)
    print(f"3. the bill: {grid.relative_to(ROOT)}, {len(selected)} tasks x {spec.epochs} epochs x {len(spec.models)} models")
    print(f"   {'model':28} {'as shipped':>11} {'published caching':>18} {'caching off':>12}  source")
    shipped = published = off = 0.0
    for m in spec.models:
        prices = table.price(m.slug) if table.has(m.slug) else table.price(m.model)
        caching = caches_prompt(m.model, m.params)
        as_shipped = estimate(profile, m.slug, places, prices, caching=caching)
        cached = estimate(profile, m.slug, places, prices, caching=True)
        uncached = estimate(profile, m.slug, places, prices, caching=not marks_breakpoints(m.model))
        shipped, published, off = shipped + as_shipped.usd, published + cached.usd, off + uncached.usd
        print(f"   {m.slug:28} {as_shipped.usd:11,.0f} {cached.usd:18,.0f} {uncached.usd:12,.0f}  {as_shipped.source}")
    print(f"   total: as shipped ${shipped:,.0f}, with the published caching ${published:,.0f} "
          f"(ratio {shipped / published:.3f}), caching off ${off:,.0f} (ratio {off / published:.2f})")  # fmt: skip


def standin_caching(rows: list[dict[str, Any]], table: PriceTable, trials: int) -> None:
    from apiflow.agent import TrialSpec
    from apiflow.bank import DEFAULT_BANK
    from apiflow.models.litellm_client import LiteLLMClient, configure_litellm
    from apiflow.results.prices import cost_usd
    from apiflow.runner import play_trial
    from apiflow.testing.standin_server import StandinConfig, StandinServer

    claude = "claude-sonnet-4-6"
    bank = load_bank(DEFAULT_BANK)
    tasks = sorted(bank.tasks)[:trials]
    configure_litellm()
    server = StandinServer(StandinConfig(plays=((claude, "apiflow/oracle"),)))
    server.start()
    prices = table.price(claude)
    bills, shares = {}, {}

    async def play(caching: bool) -> None:
        cost = read = prompt = 0.0
        for task_id in tasks:
            task = bank.task(task_id)
            params = {"api_base": server.root, "api_key": "sk-ant-local", "prompt_caching": caching}
            spec = TrialSpec(task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                             bank_hash=bank.hash, run_id="bill", model_slug=claude)  # fmt: skip
            tokens = (await play_trial(spec, LiteLLMClient(f"anthropic/{claude}", params))).apiflow.tokens
            cost += cost_usd(tokens, prices)
            read += tokens.cache_read
            prompt += tokens.input + tokens.cache_read + tokens.cache_write
        bills[caching], shares[caching] = cost, read / prompt if prompt else 0.0

    loop = asyncio.new_event_loop()  # one loop for every trial, as a grid actor has
    try:
        for caching in (True, False):
            loop.run_until_complete(play(caching))
    finally:
        loop.close()
        server.stop()
    claude_rows = [r for r in rows if r["model"].startswith("claude-")]
    published = sum(r["tokens_cache"] for r in claude_rows) / sum(
        r["tokens_total"] - r["tokens_output"] for r in claude_rows
    )
    print(f"4. caching played: {len(tasks)} oracle trials as {claude} through litellm and the stand-in")
    print(f"   prompt read from cache: {shares[True]:.1%} with the grid's default (published Claude trials: "
          f"{published:.1%}); {shares[False]:.1%} with caching off")  # fmt: skip
    print(f"   cost ${bills[True]:.2f} with, ${bills[False]:.2f} without (ratio {bills[False] / bills[True]:.2f})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=Path, default=ROOT / "configs" / "grids" / "leaderboard.yaml")
    parser.add_argument("--standin", type=int, default=10, metavar="N", help="trials for part 4 (0: skip)")
    args = parser.parse_args(argv)
    spec = load_grid(args.grid)
    table = load_price_table(ROOT / spec.price_table if not Path(spec.price_table).is_absolute() else spec.price_table)
    rows = published_rows()
    print(f"published trials: {len(rows):,}; price table {table.version} ({table.hash[:12]})")
    held_out(rows, table)
    left_out(rows, table)
    bill(rows, table, args.grid.resolve())
    if args.standin:
        standin_caching(rows, table, args.standin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
