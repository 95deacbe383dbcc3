"""Agent loops on the providers' batch tier (issue 28 part 1): the bill against the synchronous tier.

    .venv/bin/python bench/bench_batch.py [--epochs 4] [--in-flight 32] [--latency 1.0] [--rpm 600]
        [--batch-latency 2.0] [--wait 0.5] [--poll 0.5] [--size 64] [--deadline 120] [--kill-at 0.4]

A leaderboard-shaped grid: ``anthropic/claude-sonnet-4-6`` and ``openai/gpt-5-mini`` (chat route),
each through litellm's real route to a stand-in provider of its own, which plays the calibrated sim
of that published model (``apiflow/sim:calibrated-<slug>``: verdicts at the published pass rates;
token usage from message sizes, and Anthropic's prompt cache billed as Anthropic documents it), over
the sample bank's 13 tasks x ``--epochs``, ``--in-flight`` trials per actor (one actor per CPU), caching
on, ``canary_key: none`` (records comparable across folders), priced by configs/prices/2027-02.yaml.
Three arms, each on fresh stand-ins and a fresh private Ray:

(a) ``tier: standard`` (the baseline), the grid's ``ratelimits`` at ``--rpm`` per provider and each
    stand-in limited the same (429 + ``Retry-After`` over it), answering after ``--latency`` s;
(b) ``tier: batch`` for both models: batches end ``--batch-latency`` s after creation, gathered every
    ``--wait`` s (or ``--size`` turns) and polled every ``--poll`` s;
(c) (b) again with the driver as a subprocess (``python -m cluster.driver GRID --no-progress``), SIGKILLed
    with its process group and private Ray once the stand-ins have run ``--kill-at`` of (b)'s batch
    requests and both hold a batch still running; then the same command again, to the end.

Printed: each arm's bill (the stored trials' ``cost_usd``, and the stand-ins' billed tokens per tier
priced by the same table), the ratio batch / sync (goal <= 0.55), wall times, verdicts per trial id
against (a), trials lost, the calls served per tier, and for (c) against (b): batch requests billed,
``custom_id``s run more than once, ``paid_twice``. Exit status 0 when every goal holds.
Figures: docs/results/issue28-batch.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

from apiflow.bank import DEFAULT_BANK  # noqa: E402
from apiflow.results.batch_journal import BatchJournal  # noqa: E402
from apiflow.results.prices import PriceTable, cost_usd, load_price_table  # noqa: E402
from apiflow.results.store import ResultStore  # noqa: E402
from apiflow.testing.standin_server import StandinConfig, StandinServer  # noqa: E402

PRICES = ROOT / "configs/prices/2027-02.yaml"
MODELS = (("anthropic", "claude-sonnet-4-6"), ("openai", "gpt-5-mini"))
"""(provider, slug): one stand-in each, as each is its own provider with its own limit and bill."""
GOAL = 0.55


# ---- the stand-ins ------------------------------------------------------------------------------
class Providers:
    """One stand-in per provider, playing the calibrated sim of its model."""

    def __init__(self, args: argparse.Namespace) -> None:
        plays = tuple((slug, f"apiflow/sim:calibrated-{slug}") for _, slug in MODELS)
        config = StandinConfig(plays=plays, latency_s=args.latency, rpm=args.rpm, burst_s=1.0,
                               batch_latency_s=args.batch_latency)  # fmt: skip
        self.servers = {provider: StandinServer(config) for provider, _ in MODELS}

    def __enter__(self) -> Providers:
        for server in self.servers.values():
            server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.servers.values():
            server.stop()

    def base(self, provider: str) -> str:
        server = self.servers[provider]
        return server.root if provider == "anthropic" else server.url

    def settled(self) -> dict[str, Any]:
        """Each provider's stats with what is due in its batches done (as ``GET /stats`` answers)."""
        for server in self.servers.values():
            server.provider.batches.settle_all()
        return {provider: server.provider.stats for provider, server in self.servers.items()}

    def running(self) -> dict[str, int]:
        """Batches not yet ended, per provider (settled to now)."""
        found = {}
        for provider, server in self.servers.items():
            book = server.provider.batches
            with book.lock:
                book.settle_all()
                found[provider] = sum(job.ended_at is None for job in book.jobs.values())
        return found

    def batch_requests(self) -> int:
        return sum(stats.batch.requests for stats in self.settled().values())

    def custom_ids(self) -> Counter[tuple[str, str]]:
        """Times each ``(provider, custom_id)`` was run in a batch."""
        runs: Counter[tuple[str, str]] = Counter()
        for server in self.servers.values():
            runs.update(server.provider.batches.attempts)
        return runs

    def bill(self, table: PriceTable) -> dict[str, float]:
        """USD the stand-ins billed, per tier: their tokens priced at the model's rates for the tier."""
        usd = {"sync": 0.0, "batch": 0.0}
        stats_of = self.settled()
        for provider, slug in MODELS:
            stats = stats_of[provider]
            usd["sync"] += cost_usd(stats.sync, table.price(slug))
            usd["batch"] += cost_usd(stats.batch, table.price(slug, "batch"))
        return usd


# ---- the grid -----------------------------------------------------------------------------------
def grid_data(args: argparse.Namespace, providers: Providers, out: Path, tier: str) -> dict[str, Any]:
    batching = {"size": args.size, "wait_s": args.wait, "poll_s": args.poll, "deadline_s": args.deadline,
                "expected_s": args.batch_latency}  # fmt: skip
    return {
        "name": "batch-bench", "bank": str(DEFAULT_BANK), "epochs": args.epochs, "seed": 0, "out": str(out),
        "canary_key": "none", "preflight": "off", "price_table": str(PRICES),
        "concurrency": {"trials_per_actor": args.in_flight},
        "ratelimits": {provider: {"rpm": args.rpm, "burst_s": 1.0} for provider, _ in MODELS},
        "models": [{"slug": slug, "model": f"{provider}/{slug}", "max_tokens": 16384, "tier": tier,
                    "batching": batching,
                    "params": {"api_base": providers.base(provider), "api_key": "sk-bench", "timeout": 60}}
                   for provider, slug in MODELS],
    }  # fmt: skip


@dataclass
class Arm:
    name: str
    wall_s: float = 0.0
    trials_s: float | None = None
    planned: set[str] = field(default_factory=set)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: dict[str, list[Any]] = field(default_factory=dict)
    served: Counter[str] = field(default_factory=Counter)
    stored_usd: float = 0.0
    billed: dict[str, float] = field(default_factory=dict)
    batch_requests: int = 0
    sync_requests: int = 0
    answered_429: int = 0
    paid_twice: int = 0
    custom_ids: Counter[tuple[str, str]] = field(default_factory=Counter)
    batch_tier: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return len(self.planned - set(self.rows))


def planned_ids(data: dict[str, Any]) -> set[str]:
    from cluster.driver import absolute_paths
    from cluster.plan import plan_grid
    from cluster.spec import GridSpec
    from cluster.worker import load_checked_bank

    spec = absolute_paths(GridSpec.model_validate(data))
    return {t.trial_id for t in plan_grid(spec, load_checked_bank(spec))}


def collect(arm: Arm, out: Path, providers: Providers, table: PriceTable) -> Arm:
    """What the store holds and what the stand-ins billed."""
    store = ResultStore(str(out))
    for row in store.read_rows().to_pylist():
        arm.rows[row["trial_id"]] = row
        record = store.read_transcript(row["model"], row["trial_id"])
        arm.messages[row["trial_id"]] = [m.get("content") for m in record["messages"]]
        batch = sum(len(entry) > 3 and entry[3] == "batch" for entry in record["apiflow"].get("served") or [])
        arm.served["batch"] += batch
        arm.served["sync"] += row["model_calls"] - batch  # a call the provider named no tier for: synchronous
    arm.stored_usd = sum(r["cost_usd"] or 0.0 for r in arm.rows.values())
    arm.billed = providers.bill(table)
    stats = providers.settled().values()
    arm.batch_requests = sum(s.batch.requests for s in stats)
    arm.sync_requests = sum(s.sync.requests for s in stats)
    arm.answered_429 = sum(s.rate_limited for s in stats)
    arm.paid_twice = sum(s.paid_twice for s in stats)
    arm.custom_ids = providers.custom_ids()
    return arm


def run_inproc(name: str, tier: str, args: argparse.Namespace, work: Path, table: PriceTable) -> Arm:
    """An arm driven by ``run_grid`` in this process (its own private Ray, started and stopped by it)."""
    from cluster.driver import run_grid
    from cluster.spec import GridSpec

    with Providers(args) as providers:
        data = grid_data(args, providers, work / name, tier)
        arm = Arm(name, planned=planned_ids(data))
        began = time.monotonic()
        summary = run_grid(GridSpec.model_validate(data), progress=False)
        arm.wall_s = time.monotonic() - began
        arm.trials_s = summary.phases.get("trials_s")
        for worker in summary.workers:
            for key, value in (worker.get("batch_tier") or {}).items():
                arm.batch_tier[key] = arm.batch_tier.get(key, 0) + value
        return collect(arm, work / name, providers, table)


# ---- (c): the driver killed while batches run, then the same command again ------------------------
def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, or not ours
        return b""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_private_ray(temp_dir: str, timeout_s: float = 30.0) -> int:
    """SIGKILL every process of the private Ray under ``temp_dir`` (they name it in their command
    line, or inherited it in their environment from the driver we started) and wait until they are
    gone: a worker outliving its driver would store trials the resumed run also plays. The count."""
    needle = temp_dir.encode()
    killed: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()
                and (needle in _cmdline(int(p)) or needle in _environ(int(p))) and _alive(int(p))]  # fmt: skip
        if not pids:
            return len(killed)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    raise RuntimeError(
        f"processes of the private Ray under {temp_dir} outlived SIGKILL for {timeout_s:.0f} s"
    )


def stop_driver(driver: subprocess.Popen[bytes], ray_dir: str) -> None:
    """Kill the driver's process group if it still runs, then its private Ray, then the Ray's folder."""
    if driver.poll() is None:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    kill_private_ray(ray_dir)
    shutil.rmtree(ray_dir, ignore_errors=True)


def journal_line(when: str, store: ResultStore) -> str:
    entries = BatchJournal(store.objects).entries().values()
    collected = sum(e.collected for e in entries)
    waiting = sum(not e.collected and e.batch_id is not None for e in entries)
    unconfirmed = sum(e.batch_id is None for e in entries)
    return (f"{when}: {len(entries)} batches, {collected} collected, {waiting} submitted and not collected, "
            f"{unconfirmed} written before submission with no batch id")  # fmt: skip


def start_driver(grid_file: Path, ray_dir: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "APIFLOW_RAY_TEMP_DIR": ray_dir}
    env.pop("RAY_ADDRESS", None)
    with open(log, "ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "cluster.driver", str(grid_file), "--no-progress"],
            cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def run_killed(args: argparse.Namespace, work: Path, table: PriceTable, reference: int) -> Arm:
    """(c): the batch grid's driver SIGKILLed with batches running at the stand-ins, then rerun."""
    name = "c-kill"
    with Providers(args) as providers:
        data = grid_data(args, providers, work / name, "batch")
        arm = Arm(name, planned=planned_ids(data))
        grid_file = work / f"{name}.yaml"
        grid_file.write_text(yaml.safe_dump(data))
        log = work / f"{name}.log"
        began = time.monotonic()
        ray_dir = tempfile.mkdtemp(prefix="abk-", dir="/tmp")  # short: Ray's unix socket paths
        driver = start_driver(grid_file, ray_dir, log)
        try:
            target = args.kill_at * reference
            while driver.poll() is None:
                running = providers.running()
                if providers.batch_requests() >= target and all(running.values()):
                    break
                time.sleep(0.05)
            if driver.poll() is not None:
                arm.notes.append(f"NOT KILLED: the driver exited ({driver.returncode}) first")
            else:
                running = providers.running()
                done_at_kill = providers.batch_requests()
                os.killpg(driver.pid, signal.SIGKILL)  # the driver and what shares its group
                driver.wait()
                killed_at = time.monotonic() - began
                extra = kill_private_ray(ray_dir)
                store = ResultStore(str(work / name))
                stored = len(store.done_ids() & arm.planned)
                arm.notes.append(
                    f"killed at {killed_at:.0f} s: {done_at_kill} batch requests run ({done_at_kill / reference:.0%} of "
                    f"(b)'s), batches running {running['anthropic']} (anthropic) + {running['openai']} (openai), "
                    f"{stored} of {len(arm.planned)} trials stored; {extra} more Ray processes SIGKILLed")  # fmt: skip
                arm.notes.append(journal_line("the journal at the kill", store))
        finally:
            stop_driver(driver, ray_dir)
        resumed_at = time.monotonic()
        ray_dir = tempfile.mkdtemp(prefix="abr-", dir="/tmp")
        driver = start_driver(grid_file, ray_dir, log)  # the same command
        try:
            status = driver.wait(timeout=max(60.0, 10 * (resumed_at - began) + 120))
        except subprocess.TimeoutExpired:
            status = None  # reported below; what it stored is counted, the rest is lost
        finally:
            stop_driver(driver, ray_dir)
        arm.wall_s = time.monotonic() - began
        arm.notes.append(journal_line("the journal at the end", ResultStore(str(work / name))))
        ended = "TIMED OUT and was killed" if status is None else f"exited {status}"
        arm.notes.append(f"the rerun took {time.monotonic() - resumed_at:.0f} s and {ended}")
        lines = log.read_text(errors="replace").splitlines()  # only the rerun ended with a summary
        arm.notes.extend(f"the rerun's summary: {line.strip()}" for line in lines if "batch tier:" in line)
        if status != 0:
            arm.notes.append("rerun log tail: " + log.read_text(errors="replace")[-1500:])
        return collect(arm, work / name, providers, table)


# ---- figures ------------------------------------------------------------------------------------
def same_verdicts(base: Arm, other: Arm) -> tuple[int, int, int, int]:
    """(trials stored in both, same verdict, same termination and calls, same message contents)."""
    both = set(base.rows) & set(other.rows)
    verdict = sum((base.rows[t]["verdict"], base.rows[t]["passed"]) == (other.rows[t]["verdict"], other.rows[t]["passed"])
                  for t in both)  # fmt: skip
    shape = sum((base.rows[t]["termination"], base.rows[t]["model_calls"])
                == (other.rows[t]["termination"], other.rows[t]["model_calls"]) for t in both)  # fmt: skip
    messages = sum(base.messages[t] == other.messages[t] for t in both)
    return len(both), verdict, shape, messages


def report(arms: dict[str, Arm], args: argparse.Namespace) -> bool:
    a, b, c = arms["a"], arms["b"], arms["c"]
    print(f"grid: sample bank 13 tasks x {args.epochs} epochs x {len(MODELS)} models "
          f"({', '.join(f'{p}/{s}' for p, s in MODELS)}, calibrated sims) = {len(a.planned)} trials; "
          f"{args.in_flight} trials per actor, one actor per CPU ({os.cpu_count()}); prices {PRICES.name}")  # fmt: skip
    print(f"sync: stand-in latency {args.latency} s, {args.rpm:g} rpm per provider (stand-in and grid); "
          f"batch: latency {args.batch_latency} s, wait {args.wait} s, poll {args.poll} s, size {args.size}")  # fmt: skip
    print(f"{'arm':22} {'stored $':>9} {'billed $ (sync+batch)':>24} {'wall s':>7} {'trials s':>8} "
          f"{'lost':>4} {'calls sync/batch':>16} {'429s':>5}")  # fmt: skip
    labels = {"a": "(a) sync (baseline)", "b": "(b) batch", "c": "(c) batch, killed"}
    for key, arm in arms.items():
        billed = sum(arm.billed.values())
        tiers = f"{arm.served['sync']}/{arm.served['batch']}"
        trials = f"{arm.trials_s:.0f}" if arm.trials_s is not None else "-"
        print(f"{labels[key]:22} {arm.stored_usd:9.4f} {billed:9.4f} ({arm.billed['sync']:.4f}+{arm.billed['batch']:.4f}) "
              f"{arm.wall_s:7.0f} {trials:>8} {arm.lost:4d} {tiers:>16} {arm.answered_429:5d}")  # fmt: skip
    ratios = {k: (arms[k].stored_usd / a.stored_usd, sum(arms[k].billed.values()) / sum(a.billed.values()))
              for k in ("b", "c")}  # fmt: skip
    for key in ("a", "b", "c"):
        usd = Counter[str]()
        for row in arms[key].rows.values():
            usd[row["model"]] += row["cost_usd"] or 0.0
        print(f"{labels[key]:22} stored $ per model: " + ", ".join(
            f"{slug} {usd[slug]:.4f} ({usd[slug] / max(1e-12, sum(r['cost_usd'] or 0.0 for r in a.rows.values() if r['model'] == slug)):.3f}x of (a))"
            for _, slug in MODELS))  # fmt: skip
    for key, (stored, billed) in ratios.items():
        print(f"ratio {key}/a: stored {stored:.3f}x, billed {billed:.3f}x (goal <= {GOAL})")
    checks = {}
    for key in ("b", "c"):
        both, verdict, shape, messages = same_verdicts(a, arms[key])
        checks[key] = both == len(a.planned) and verdict == both
        print(f"(a) vs ({key}): {both} trials in both; verdict identical {verdict}/{both}; termination and calls "
              f"{shape}/{both}; message contents {messages}/{both}")  # fmt: skip
    print(f"(b) batch tier: {b.batch_tier}")
    twice_b = sum(n > 1 for n in b.custom_ids.values())
    twice_c = sum(n > 1 for n in c.custom_ids.values())
    extra = c.batch_requests - b.batch_requests
    print(f"(c) vs (b): batch requests billed {c.batch_requests} vs {b.batch_requests} ({extra:+d}); custom ids "
          f"{len(c.custom_ids)} vs {len(b.custom_ids)}, same set: {set(c.custom_ids) == set(b.custom_ids)}; run in more "
          f"than one batch {twice_c} vs {twice_b}; paid twice {c.paid_twice} vs {b.paid_twice}; sync requests "
          f"{c.sync_requests} vs {b.sync_requests}")  # fmt: skip
    for note in c.notes:
        print(f"(c) {note}")
    ok = (
        all(ratio <= GOAL for pair in ratios.values() for ratio in pair)
        and all(checks.values())
        and a.lost == b.lost == c.lost == 0
        and c.paid_twice == b.paid_twice == 0
        and extra == 0
        and not any(n.startswith("NOT KILLED") or "TIMED OUT" in n for n in c.notes)
    )
    print("goals met" if ok else "GOALS MISSED")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4, help="epochs of the sample bank's 13 tasks")
    parser.add_argument("--in-flight", type=int, default=32, help="trials per actor (the leaderboard's 32)")
    parser.add_argument(
        "--latency", type=float, default=1.0, help="the stand-ins' seconds per synchronous answer"
    )
    parser.add_argument(
        "--rpm", type=float, default=600.0, help="requests a minute per provider (grid and stand-in)"
    )
    parser.add_argument(
        "--batch-latency", type=float, default=2.0, help="seconds from a batch's creation to its end"
    )
    parser.add_argument("--wait", type=float, default=0.5, help="batching.wait_s")
    parser.add_argument("--poll", type=float, default=0.5, help="batching.poll_s")
    parser.add_argument("--size", type=int, default=64, help="batching.size")
    parser.add_argument("--deadline", type=float, default=120.0, help="batching.deadline_s")
    parser.add_argument("--kill-at", type=float, default=0.4,
                        help="(c): kill once this share of (b)'s batch requests has run")  # fmt: skip
    args = parser.parse_args(argv)
    table = load_price_table(PRICES)
    arms: dict[str, Arm] = {}
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as folder:
        work = Path(folder)
        arms["a"] = run_inproc("a-sync", "standard", args, work, table)
        arms["b"] = run_inproc("b-batch", "batch", args, work, table)
        arms["c"] = run_killed(args, work, table, arms["b"].batch_requests)
    return 0 if report(arms, args) else 1


if __name__ == "__main__":
    sys.exit(main())
