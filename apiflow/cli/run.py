"""``apiflow run``: run trials locally (no Ray) and write their schema-1.0 JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from apiflow.agent.heap import settle_loaded
from apiflow.agent.ids import run_id_for
from apiflow.agent.loop import TrialLimits
from apiflow.agent.replay import replay_for
from apiflow.bank import DEFAULT_BANK, Bank, load_bank
from apiflow.bank.task import Task
from apiflow.errors import UsageError
from apiflow.models import check_model_name, model_prices, model_slug, uses_litellm
from apiflow.results.canary_key import FOLDER, KEY_PARTS, MODES, folder_key
from apiflow.results.objects import ObjectFolder
from apiflow.results.prices import DEFAULT_PRICE_TABLE, Prices, load_price_table
from apiflow.results.record import TrialRecord
from apiflow.results.storage import check_output
from apiflow.runner import Run, TrialPlan

ALL_TASKS = "all"


def register(subparsers: Any) -> None:
    """Add the ``run`` verb to the ``apiflow`` parser."""
    run = subparsers.add_parser("run", help="run trials locally and write their schema-1.0 JSON")
    run.add_argument(
        "--model",
        required=True,
        help="apiflow/oracle, apiflow/blank, apiflow/sim:<profile>, external/<label> (an MCP agent), <plugin>/<model> or a litellm id",
    )
    run.add_argument(
        "--task", nargs="+", required=True, metavar="TASK_ID", help=f"task ids, or `{ALL_TASKS}`"
    )
    run.add_argument("--epochs", type=int, default=1, help="trials per task (default 1)")
    run.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    run.add_argument("--out", default="results", help="output folder (default ./results)")
    run.add_argument("--bank", default=str(DEFAULT_BANK), help="bank folder or shipped bank name: sample (default), v1")
    run.add_argument("--max-messages", type=int, default=500, help="message limit per trial (default 500)")
    run.add_argument(
        "--max-seconds", type=float, default=1800.0, help="wall-time limit per trial (default 1800)"
    )
    run.add_argument(
        "--max-tool-calls", type=int, default=None, help="tool-call limit per trial (default none)"
    )
    run.add_argument("--max-tokens", type=int, default=None, help="token limit per trial (default none)")
    run.add_argument(
        "--prices",
        default=str(DEFAULT_PRICE_TABLE),
        help="price table for cost_usd (default: the pinned table)",
    )
    run.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="provider parameter for litellm models (e.g. api_base=http://127.0.0.1:8000/v1); repeatable",
    )
    run.add_argument(
        "--canary-key",
        choices=MODES,
        default=FOLDER,
        help=f"`folder` (default): canary forms from the output's secret key ({'/'.join(KEY_PARTS)}, made "
        "at its first run); `none`: from the seed alone, which anyone with a record can compute",
    )
    run.set_defaults(func=_run)


def _params(pairs: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param wants KEY=VALUE, got {pair!r}")
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value
    return params


def _select_tasks(bank: Bank, ids: list[str]) -> list[Task]:
    if ids == [ALL_TASKS]:
        return list(bank.tasks.values())
    return [bank.task(task_id) for task_id in dict.fromkeys(ids)]


def _check_run_args(args: argparse.Namespace) -> None:
    if args.epochs < 1:
        raise UsageError(f"--epochs must be at least 1, got {args.epochs}")
    if args.max_messages < 3 or args.max_seconds <= 0:
        raise UsageError("--max-messages must be at least 3 and --max-seconds positive")
    if (args.max_tool_calls is not None and args.max_tool_calls < 0) or (
        args.max_tokens is not None and args.max_tokens < 1
    ):
        raise UsageError("--max-tool-calls must be >= 0 and --max-tokens >= 1")
    check_model_name(args.model)


def _prices(path: str, slug: str, model: str) -> Prices | None:
    """The model's prices from the table (by slug, else by model id), else a plug-in's own
    (declared or free); None when there are none."""
    return model_prices(load_price_table(path), slug, model)


def _write(record: TrialRecord, out: Path) -> Path:
    path = out / record.model / f"{record.task_id}-t{record.trial}.json"
    # Whole or not at all: a Ctrl-C while writing must not leave half a record among the stored ones.
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(record.to_json(), encoding="utf-8")
    os.replace(partial, path)
    return path


def _interrupted(trials: list[TrialPlan], stored: int, folder: Path) -> str:
    """What a Ctrl-C left: the ``grid run`` wording, and how to play the rest (``apiflow run`` plays
    every trial it is given, stored or not, so the rest is named by task)."""
    left = list(dict.fromkeys(t.task.id for t in trials[stored:]))
    rest = f"To play the rest, rerun the same command with --task {' '.join(left)}" if left else ""
    if left and len({t.epoch for t in trials}) > 1:
        rest += " (every epoch of each task given is played again)"
    told = f"INTERRUPTED: {stored} of {len(trials)} trials stored in {folder}; nothing is lost."
    return f"{told} {rest}" if rest else told


def _summary(record: TrialRecord, path: Path) -> str:
    a = record.apiflow
    verdict = record.verdict or "-"
    extra = f" ({a.limit})" if a.limit else ""
    cost = f" cost=${a.cost_usd:.4f}" if a.cost_usd is not None else ""
    return (
        f"{record.task_id}-t{record.trial}  {verdict}  {a.termination.value}{extra}  "
        f"model_calls={a.model_calls} tool_calls={a.tool_calls} tool_errors={a.tool_errors} "
        f"tokens={record.tokens.total}{cost}  {record.duration_s:.3f}s  {path}"
    )


def _run(args: argparse.Namespace) -> int:
    _check_run_args(args)
    check_output(args.out)
    params = _params(args.param)
    bank = load_bank(args.bank)
    tasks = _select_tasks(bank, args.task)
    slug = model_slug(args.model)
    prices = _prices(args.prices, slug, args.model)
    out = Path(args.out)
    (out / slug).mkdir(parents=True, exist_ok=True)
    if uses_litellm(args.model):
        # External agents and plug-ins bring their own model: only litellm models need litellm configured.
        from apiflow.models.litellm_client import configure_litellm

        configure_litellm()
    if args.own_process:  # the bank (and litellm) out of the collector's walks for the whole run
        settle_loaded()
    limits = TrialLimits(
        max_messages=args.max_messages,
        max_tool_calls=args.max_tool_calls,
        max_tokens=args.max_tokens,
        max_seconds=args.max_seconds,
    )
    # A rerun into the same folder finds the key again: the same records as a run not interrupted.
    key = folder_key(ObjectFolder(str(out))) if args.canary_key == FOLDER else None
    run = Run(
        bank, run_id_for(bank.hash, slug, [t.id for t in tasks], args.epochs, args.seed), args.seed,
        limits, params=params, replay=replay_for([args.model]), canary_key=key, prices=prices,
    )  # fmt: skip
    trials = [TrialPlan(args.model, task, epoch) for epoch in range(1, args.epochs + 1) for task in tasks]

    stored = 0

    async def run_all() -> int:
        # One event loop for the whole run: a fresh loop per trial would cost more than the trial.
        nonlocal stored
        harness_outcomes = 0
        async for record in run.play(trials):  # priced by the run, call by call
            print(_summary(record, _write(record, out)), flush=True)
            stored += 1
            harness_outcomes += record.is_harness_outcome
        return harness_outcomes

    try:
        harness_outcomes = asyncio.run(run_all())
    except KeyboardInterrupt:  # the trials written so far stay; say so, and how to go on
        print(_interrupted(trials, stored, out / slug), flush=True)
        return 130
    if harness_outcomes:
        print(f"{harness_outcomes} trial(s) ended as provider/harness errors (unscored, not model failures)")
        return 1
    return 0
