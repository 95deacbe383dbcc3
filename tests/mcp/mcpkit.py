"""Shared by the MCP tests: the in-process record to compare with, and what may differ from it."""

from __future__ import annotations

import asyncio
import json
import operator
import sys
from functools import reduce
from pathlib import Path
from typing import Any

from apiflow.bank import Bank
from apiflow.bank.task import Task
from apiflow.mcp.serve import first_trial
from apiflow.models.base import ModelClient
from apiflow.results.record import WALL_TIME_FIELDS, TrialRecord

AGENT = Path(__file__).with_name("scripted_agent.py")
"""The scripted external agent (``python AGENT MODE``)."""
SLUG = "mcp"
"""The slug ``world serve --mcp`` records (``model_slug("external/mcp")``)."""
NOT_COMPARED = (*WALL_TIME_FIELDS, "model_api", "apiflow.trial_id")
"""What an MCP trial may differ in from the in-process one: wall time, the model route, and the
trial id (it hashes ``model_api``)."""


def agent_command(mode: str, *extra: str) -> list[str]:
    """The scripted agent's command line."""
    return [sys.executable, str(AGENT), mode, *extra]


def in_process(bank: Bank, task: Task, model: ModelClient, *, slug: str = SLUG, **kwargs: Any) -> TrialRecord:
    """The record ``apiflow run`` (or ``world serve --mcp``) gives ``task`` with ``model`` at seed 0."""
    return asyncio.run(first_trial(bank, task, model, slug=slug, **kwargs))


def comparable(record: TrialRecord | dict[str, Any]) -> dict[str, Any]:
    """The record as JSON without the fields an MCP trial may differ in (``NOT_COMPARED``)."""
    data = json.loads(record.to_json()) if isinstance(record, TrialRecord) else json.loads(json.dumps(record))
    for dotted in NOT_COMPARED:
        *parents, leaf = dotted.split(".")
        reduce(operator.getitem, parents, data).pop(leaf)
    return data
