"""Sweeps that stop when the answer is known (issue 28): cost, ranking and coverage, offline.

    .venv/bin/python bench/bench_adaptive.py [--seeds 200] [--jobs 2] [--outcomes FILE]

Ground truth is the full grid: the calibrated panel of the 19 published models played on bank/v1
(467 tasks x 5 epochs x 19 models = 44,365 trials, ``apiflow.panel.play``; played once and kept at
``--outcomes``). Each trial is priced at its expected cost under the published token profile
(``apiflow.analysis.token_profile``, the leaderboard grid's price table), as the dry-run estimate
prices it. A sweep is simulated by revealing the table's outcomes in the sweep's order.

Printed, per seed of the unit order (median and 10th-90th percentiles over ``--seeds``):
1. ``rank:1`` at 90 % (every rank to +-1 place, jointly): where the adaptive sweep stops, its cost
   share, Kendall's tau-b against the full grid's ranking and the pairs it orders against a
   separation of the full grid (world bootstrap, 90 %); against two fixed-order sweeps of the same
   cost: the grid's ``cluster.plan.run_order`` (epoch-major) and the same unit order non-adaptive.
   Then the share each needs before the criterion (tau-b >= 0.95, no separated pair reversed) holds
   for good (goal <= 40 %), and the same question under a 40 % cap.
2. The floor: the least cost share at which any allocation, told the true gaps, expects at most 4
   discordant pairs (tau-b ~ 0.95), for a uniform and an epoch-major order.
3. Coverage: the share of sweeps in which every interval of the question's family held the full
   grid's value at every wave, and each single 90 % sequence's coverage (goal >= 90 %); the
   estimates' bias at the stop.
4. Other questions: every rate to +-w, and "is A better than B" for a far and a near pair.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apiflow.analysis.adaptive import Question, Sweep, paths, simulate, unit_order  # noqa: E402
from apiflow.analysis.bootstrap import interval, resample_worlds  # noqa: E402
from apiflow.analysis.token_profile import published_profile  # noqa: E402
from apiflow.panel.play import play_panel  # noqa: E402
from apiflow.panel.stability import kendall_tau_b  # noqa: E402
from apiflow.results.prices import load_price_table  # noqa: E402
from apiflow.results.taskid import parse_task_id  # noqa: E402
from cluster.plan import PlannedTrial, run_order  # noqa: E402

BANK = ROOT / "bank" / "v1"
PRICES = ROOT / "configs" / "prices" / "2027-01.yaml"  # the leaderboard grid's table
EPOCHS = 5
TAU = 0.95
GOAL = 0.40
GRID = np.linspace(0.025, 1.0, 40)  # cost shares the fixed orders are read at


class Grid:
    """The full grid's outcomes and expected costs, by model and (task, epoch) unit."""

    def __init__(self, path: Path, jobs: int) -> None:
        if not path.exists():
            start = time.monotonic()
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(play_panel(str(BANK), epochs=EPOCHS, jobs=jobs), path)
            print(f"played the calibrated panel on bank/v1 in {time.monotonic() - start:.0f} s -> {path}")
        rows = pq.read_table(path, columns=["model", "task_id", "epoch", "verdict"]).to_pylist()
        self.models = sorted({r["model"] for r in rows})
        self.tasks = sorted({r["task_id"] for r in rows})
        m_at = {m: i for i, m in enumerate(self.models)}
        t_at = {t: i for i, t in enumerate(self.tasks)}
        passed = np.full((len(self.models), len(self.tasks), EPOCHS), np.nan)
        for r in rows:
            passed[m_at[r["model"]], t_at[r["task_id"]], r["epoch"] - 1] = r["verdict"] == "C"
        if np.isnan(passed).any():
            raise SystemExit(
                f"{path}: not a full grid of {len(self.models)} models x {len(self.tasks)} tasks x {EPOCHS}"
            )
        self.refs = [parse_task_id(t) for t in self.tasks]
        self.outcomes = passed.reshape(len(self.models), -1)  # unit u = task * EPOCHS + epoch
        self.costs = np.repeat(self._task_costs(), EPOCHS, axis=1)
        self.world = np.repeat([r.world for r in self.refs], EPOCHS)
        self.full = self.outcomes.mean(1)
        self.total = float(self.costs.sum())

    def _task_costs(self) -> np.ndarray:
        profile, table = published_profile(), load_price_table(PRICES)
        out = np.zeros((len(self.models), len(self.tasks)))
        for m, model in enumerate(self.models):
            prices = table.price(model)
            for t, ref in enumerate(self.refs):
                cell, _ = profile.cell(profile.model_name(model), ref.kind, ref.length)
                out[m, t] = cell.cost(prices)[0]
        return out

    def separated(self, b: int = 10_000) -> np.ndarray:
        """(M, M) sign of the pairs the full grid separates at 90 % (the report's paired world bootstrap)."""
        worlds = sorted(set(self.world))
        index = np.array([worlds.index(w) for w in self.world])
        passes = np.stack(
            [np.bincount(index, weights=row, minlength=len(worlds)) for row in self.outcomes], 1
        )
        counts = np.stack([np.bincount(index, minlength=len(worlds)).astype(float)] * len(self.models), 1)
        rates = resample_worlds(len(worlds), b, 0).ratio(passes, counts)  # (B, M)
        diff = rates[:, :, None] - rates[:, None, :]
        low, high = interval(diff.reshape(b, -1)).reshape(2, len(self.models), len(self.models))
        return np.where(low > 0, 1, np.where(high < 0, -1, 0))


def meets(grid: Grid, sign: np.ndarray, estimates: np.ndarray) -> tuple[float, int, bool]:
    """tau-b against the full grid, separated pairs reversed, and whether the criterion holds."""
    tau = kendall_tau_b(estimates, grid.full)
    order = np.sign(estimates[:, None] - estimates[None, :])
    reversed_ = int(((sign != 0) & (order == -sign)).sum() // 2)
    return tau, reversed_, tau >= TAU and reversed_ == 0


class FixedOrder:
    """Per-model estimates after any cost share of a fixed order over all 44,365 trials."""

    def __init__(self, grid: Grid, model: np.ndarray, unit: np.ndarray) -> None:
        m = len(grid.models)
        onehot = np.zeros((m, len(model)))
        onehot[model, np.arange(len(model))] = 1.0
        self.passes = np.cumsum(onehot * grid.outcomes[model, unit], axis=1)
        self.counts = np.cumsum(onehot, axis=1)
        self.spent = np.cumsum(grid.costs[model, unit]) / grid.total

    def at(self, share: float) -> np.ndarray:
        k = min(int(np.searchsorted(self.spent, share - 1e-12)), len(self.spent) - 1)
        return self.passes[:, k] / np.maximum(self.counts[:, k], 1)


def grid_run_order(grid: Grid, seed: int) -> FixedOrder:
    """The grid's own order (epoch-major, worlds interleaved, models round-robin) with grid seed ``seed``.

    Epoch numbers are only trial seeds, so which played epoch is run first is drawn per seed too:
    otherwise every cut of the order would read the same epochs of the one played grid.
    """
    label = np.random.default_rng(seed).permutation(EPOCHS) + 1
    trials = [PlannedTrial(f"{m}:{u}", m, grid.tasks[u // EPOCHS], grid.world[u], int(label[u % EPOCHS]), 0)
              for m in range(len(grid.models)) for u in range(grid.outcomes.shape[1])]  # fmt: skip
    ordered = run_order(trials, seed)
    model = np.array([t.model_index for t in ordered])
    unit = np.array([int(t.trial_id.split(":")[1]) for t in ordered])
    return FixedOrder(grid, model, unit)


def uniform_order(grid: Grid, order: np.ndarray) -> FixedOrder:
    """The adaptive sweep's unit order, every model advancing together (no stopping)."""
    m, n = grid.outcomes.shape
    return FixedOrder(grid, np.tile(np.arange(m), n), np.repeat(order, m))


def needed(shares: np.ndarray, ok: np.ndarray) -> float:
    """The least share from which the criterion holds at every later point (inf: never for good)."""
    bad = np.flatnonzero(~ok)
    if len(bad) == 0:
        return float(shares[0])
    return float(shares[bad[-1] + 1]) if bad[-1] + 1 < len(shares) else math.inf


def estimates_of(sweep: Sweep, wave: int = -1) -> np.ndarray:
    return np.array([r.estimate for r in sweep.waves[wave].assessment.rates])


def spread(values: list[float]) -> str:
    v = np.array(values, float)
    finite = v[np.isfinite(v)]
    if len(finite) < len(v) / 2:
        return f"> 1 in {np.mean(~np.isfinite(v)):.0%} of seeds"
    p10, p50, p90 = np.percentile(v, [10, 50, 90])
    return f"{p50:.3f} [{p10:.3f}, {p90:.3f}]"


def ranking(grid: Grid, sign: np.ndarray, seeds: int, step: int, cap: float | None) -> dict[str, list]:
    """Adaptive ``rank:1`` against both fixed orders at the same cost, per seed."""
    out: dict[str, list] = {k: [] for k in ("stop", "share", "a", "r", "u", "need_a", "need_r", "need_u")}
    question = Question("rank", 0.90, places=1)
    for seed in range(seeds):
        order = unit_order(grid.outcomes.shape[1], seed)
        sweep = simulate(question, grid.models, grid.outcomes[:, order], grid.costs[:, order], step=step,
                         cap=None if cap is None else cap * grid.total)  # fmt: skip
        fixed, uniform = grid_run_order(grid, seed), uniform_order(grid, order)
        share = sweep.final.spent / grid.total
        out["stop"].append(sweep.stop)
        out["share"].append(share)
        out["a"].append(meets(grid, sign, estimates_of(sweep)))
        out["r"].append(meets(grid, sign, fixed.at(share)))
        out["u"].append(meets(grid, sign, uniform.at(share)))
        shares = np.array([w.spent / grid.total for w in sweep.waves])
        out["need_a"].append(needed(shares, np.array([meets(grid, sign, estimates_of(sweep, w))[2]
                                                      for w in range(len(sweep.waves))])))  # fmt: skip
        out["need_r"].append(needed(GRID, np.array([meets(grid, sign, fixed.at(s))[2] for s in GRID])))
        out["need_u"].append(needed(GRID, np.array([meets(grid, sign, uniform.at(s))[2] for s in GRID])))
    return out


def print_ranking(title: str, out: dict[str, list]) -> None:
    stops = {s: out["stop"].count(s) for s in sorted(set(out["stop"]))}
    print(f"{title}\n  stopped: {stops}; cost share at the stop {spread(out['share'])}")
    print(f"  {'at that cost':34} {'tau-b':>22} {'reversed':>9} {'criterion met':>14}")
    for key, name in (("a", "adaptive"), ("r", "fixed: grid run_order"), ("u", "fixed: same unit order")):
        rows = out[key]
        print(f"  {name:34} {spread([r[0] for r in rows]):>22} {np.mean([r[1] for r in rows]):9.2f} "
              f"{np.mean([r[2] for r in rows]):14.0%}")  # fmt: skip


def floor(grid: Grid, target: float = 4.0) -> dict[str, float]:
    """Least cost share at which an allocation told the true gaps expects <= ``target`` discordant pairs.

    Greedy over per-model shares in 5 % steps, best expected-discordance drop per dollar first; a
    pair's SE is that of its paired difference over the common share (normal approximation).
    """
    m, n = grid.outcomes.shape
    i, j = np.triu_indices(m, 1)
    gap = np.abs(grid.full[i] - grid.full[j])
    cube = grid.outcomes.reshape(m, -1, EPOCHS)
    d = cube[i] - cube[j]
    sds = {"uniform order": d.reshape(len(i), -1).std(1),
           "epoch-major order": np.sqrt(d.var(2).mean(1) * EPOCHS / (EPOCHS - 1))}  # fmt: skip
    cost = grid.costs.sum(1)
    erf = np.vectorize(math.erf)

    def discordant(share: np.ndarray, sd: np.ndarray) -> float:
        f = np.minimum(share[i], share[j])
        se = sd * np.sqrt((1 - f) / (f * n))
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(
                (se > 0) & (gap > 0), 0.5 * (1 + erf(-gap / np.where(se > 0, se, 1) / math.sqrt(2))), 0.0
            )
        return float(p.sum())

    out = {}
    for name, sd in sds.items():
        share = np.full(m, 0.05)
        while discordant(share, sd) > target:
            gains = []
            for k in range(m):
                more = share.copy()
                more[k] = min(1.0, share[k] + 0.05)
                gains.append((discordant(share, sd) - discordant(more, sd)) / cost[k] if share[k] < 1 else -1)
            share[int(np.argmax(gains))] = min(1.0, share[int(np.argmax(gains))] + 0.05)
        out[name] = float((share * cost).sum() / cost.sum())
    return out


def coverage(grid: Grid, seeds: int, step: int) -> None:
    """Family and single-sequence coverage of ``rank:1`` over every wave of ``seeds`` sweeps; bias."""
    question = Question("rank", 0.90, places=1)
    m, n = grid.outcomes.shape
    i, j = np.triu_indices(m, 1)
    truth_pair = grid.full[i] - grid.full[j]
    family_ok, rate_hits, pair_hits, bias = 0, np.zeros(m), np.zeros(len(i)), []
    for seed in range(seeds):
        order = unit_order(n, seed)
        x = grid.outcomes[:, order]
        sweep = simulate(question, grid.models, x, grid.costs[:, order], step=step)
        family = paths(x, n, *question.alphas(m))
        single = paths(x, n, 0.10, 0.10)
        ok_family, ok_rate, ok_pair = True, np.ones(m, bool), np.ones(len(i), bool)
        for wave in sweep.waves:
            c = wave.counts - 1
            common = np.minimum(c[i], c[j])
            for p, flag in ((family, "family"), (single, "single")):
                r_ok = (p.rate_low[np.arange(m), c] <= grid.full + 1e-12) & (
                    grid.full <= p.rate_high[np.arange(m), c] + 1e-12
                )
                d_ok = (p.diff_low[np.arange(len(i)), common] <= truth_pair + 1e-12) & (
                    truth_pair <= p.diff_high[np.arange(len(i)), common] + 1e-12)  # fmt: skip
                if flag == "family":
                    ok_family &= bool(r_ok.all() and d_ok.all())
                else:
                    ok_rate &= r_ok
                    ok_pair &= d_ok
        family_ok += ok_family
        rate_hits += ok_rate
        pair_hits += ok_pair
        bias.append(estimates_of(sweep) - grid.full)
    b = np.array(bias)
    print(f"3. coverage over {seeds} sweeps (rank:1, every wave, truth = the full grid)")
    print(f"   the question's family (19 rates at 10 %/19, 171 pairs at 10 %/171) held in every wave: "
          f"{family_ok / seeds:.1%} of sweeps (nominal 90 %)")  # fmt: skip
    print(f"   single 90 % sequences held at every wave: rates min {rate_hits.min() / seeds:.1%} "
          f"mean {rate_hits.mean() / seeds:.1%}; pairs min {pair_hits.min() / seeds:.1%} mean {pair_hits.mean() / seeds:.1%}")  # fmt: skip
    worst = int(np.argmax(np.abs(b.mean(0))))
    print(f"   bias of the stopped estimates: largest |mean(estimate - full)| {100 * abs(b.mean(0)[worst]):.3f} pts "
          f"({grid.models[worst]}, SE {100 * b[:, worst].std() / math.sqrt(seeds):.3f}); mean |error| "
          f"{100 * np.abs(b).mean():.2f} pts")  # fmt: skip


def other_questions(grid: Grid, seeds: int, step: int) -> None:
    full = dict(zip(grid.models, grid.full, strict=True))
    by_rate = sorted(grid.models, key=lambda m: -full[m])
    far, near = (by_rate[0], by_rate[11]), (by_rate[2], by_rate[10])
    questions = [Question("width", 0.90, width=0.03), Question("width", 0.90, width=0.02),
                 Question("better", 0.90, pair=far), Question("better", 0.90, pair=near),
                 Question("rank", 0.90, places=3, joint=False)]  # fmt: skip
    print(f"4. other questions ({seeds} seeds; a pair question's share is of its two models' full cost)")
    for question in questions:
        shares, answers = [], []
        for seed in range(seeds):
            order = unit_order(grid.outcomes.shape[1], seed)
            sweep = simulate(question, grid.models, grid.outcomes[:, order], grid.costs[:, order], step=step)
            base = grid.total
            if question.kind == "better":
                base = float(grid.costs[[grid.models.index(m) for m in question.pair]].sum())
            shares.append(sweep.final.spent / base)
            answers.append(f"{sweep.stop}:{sweep.final.assessment.verdict}")
        gap = ""
        if question.kind == "better":
            gap = f" (full grid: {100 * (full[question.pair[0]] - full[question.pair[1]]):+.2f} pts)"
        print(f"   {question.describe():66} share {spread(shares)}; {sorted(set(answers))}{gap}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200, help="unit orders simulated")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the one-time panel play")
    parser.add_argument(
        "--outcomes", type=Path, default=ROOT / "results" / "bench-adaptive" / "calibrated-v1.parquet"
    )
    parser.add_argument(
        "--step", type=float, default=0.05, help="units an open model runs per wave, share of the plan"
    )
    args = parser.parse_args()
    start = time.monotonic()
    grid = Grid(args.outcomes, args.jobs)
    m, n = grid.outcomes.shape
    step = max(int(args.step * n), 1)
    sign = grid.separated()
    print(f"full grid: {len(grid.models)} models x {n} units = {grid.outcomes.size:,} trials; expected cost "
          f"${grid.total:,.0f} ({PRICES.name}, published token profile); the world bootstrap separates "
          f"{int((sign > 0).sum())} of {m * (m - 1) // 2} pairs at 90 %; waves of {step} units ({args.step:.0%})")  # fmt: skip
    seeds = args.seeds
    out = ranking(grid, sign, seeds, step, None)
    print_ranking(f"1. rank every model to +-1 place at 90 % (jointly), {seeds} seeds", out)
    print(
        f"  share needed before tau-b >= {TAU} with no separated pair reversed holds for good (goal <= {GOAL:.0%}):"
    )
    for key, name in (("need_a", "adaptive (its waves)"), ("need_r", "fixed: grid run_order (2.5 % grid)"),
                      ("need_u", "fixed: same unit order (2.5 % grid)")):  # fmt: skip
        print(f"    {name:40} {spread(out[key])}")
    capped = ranking(grid, sign, seeds, step, GOAL)
    print_ranking(f"1b. the same question with a cap of {GOAL:.0%} of the full grid's cost", capped)
    floors = floor(grid)
    print("2. floor: least share at which an allocation told the true gaps expects <= 4 discordant pairs: "
          + ", ".join(f"{k} {v:.0%}" for k, v in floors.items()))  # fmt: skip
    coverage(grid, seeds, step)
    other_questions(grid, min(seeds, 50), step)
    print(f"bench time {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
