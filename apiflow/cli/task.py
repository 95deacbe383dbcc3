"""``apiflow task list|show``: look at a bank's tasks as the model and the grader see them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from apiflow.agent.prompts import user_message
from apiflow.bank import DEFAULT_BANK, load_bank


def register(subparsers: Any) -> None:
    """Add the ``task`` verb to the ``apiflow`` parser."""
    task = subparsers.add_parser("task", help="list and show the tasks of a bank")
    verbs = task.add_subparsers(dest="task_verb", metavar="VERB", required=True)
    listing = verbs.add_parser("list", help="one line per task")
    listing.add_argument("--bank", default=str(DEFAULT_BANK), help="bank folder or shipped bank name: sample (default), v1")
    listing.set_defaults(func=_task_list)
    show = verbs.add_parser(
        "show", help="a task's prompt as the model sees it, its seed, grading spec and golden path"
    )
    show.add_argument("task_id", help="a task id of the bank (apiflow task list names them)")
    show.add_argument("--bank", default=str(DEFAULT_BANK), help="bank folder or shipped bank name: sample (default), v1")
    show.add_argument("--json", action="store_true", help="print the task as JSON")
    show.set_defaults(func=_task_show)


def _task_list(args: argparse.Namespace) -> int:
    bank = load_bank(args.bank)
    print(f"# bank {bank.name} ({bank.hash[:12]}), {len(bank.tasks)} tasks")
    for task in bank.tasks.values():
        steps = sum(len(step.calls) for step in task.golden)
        print(
            f"{task.id:28s} {task.kind:5s} len={task.length:<2d} world={task.world} "
            f"golden_calls={steps:<3d} card={','.join(task.card_fields)}"
        )
    return 0


def _task_show(args: argparse.Namespace) -> int:
    task = load_bank(args.bank).task(args.task_id)
    if args.json:
        print(json.dumps(task.model_dump(mode="json"), indent=2, ensure_ascii=False))
        return 0
    print(f"task {task.id}  ({task.kind}, length {task.length}, world {task.world})\n")
    print("user message:\n" + _indent(user_message(task)) + "\n")
    print("workspace seed:")
    for var in task.seed:
        print(f"  {var.scope}:{var.name} = {json.dumps(var.value, ensure_ascii=False)}")
    print("\nexpected card: " + json.dumps(task.expected_card, ensure_ascii=False))
    print(
        f"predicates: {len(task.predicates)}  checkpoints: {len(task.checkpoints)}  "
        f"constraints: {len(task.constraints)}"
    )
    print(f"golden path: {len(task.golden)} turns, {sum(len(s.calls) for s in task.golden)} calls")
    return 0


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
