"""Live evidence settles cut previews from the workspace exactly as a transcript replay would.

``evidence_from_workspace`` skips the replay when the workspace answers on its own (no long body,
or no ``read`` call); these trials, offline models over every sample task, hold both kinds.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from apiflow.agent.ids import derived_seed
from apiflow.agent.loop import run_loop
from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, Task, load_bank
from apiflow.grading.live import _cut_previews
from apiflow.grading.transcript import cut_previews
from apiflow.models import make_model
from apiflow.models.registry import OFFLINE_MODELS
from apiflow.tools import Toolbox, Workspace, tool_schemas
from apiflow.world import WorldSession

BANK = load_bank(DEFAULT_BANK)
MODELS = list(OFFLINE_MODELS)


def _trial(task: Task, model: str, seed: int) -> tuple[Workspace, list[dict[str, Any]]]:
    session = WorldSession(BANK.world_of(task), seed, state_overrides=task.world_state)
    workspace = Workspace(list(task.seed), session.spec_content(), id_seed=seed)
    messages = initial_messages(task)
    client = make_model(model, task, derived_seed("model", seed, task.id, 1))
    asyncio.run(run_loop(client, Toolbox(workspace, session.send), tool_schemas(), messages))
    return workspace, messages


@pytest.mark.parametrize("task", list(BANK.tasks.values()), ids=lambda t: t.id)
def test_workspace_previews_equal_the_replay(task: Task) -> None:
    for model in MODELS:
        for seed in range(3):
            workspace, messages = _trial(task, model, seed)
            assert _cut_previews(workspace, messages) == cut_previews(messages), (model, seed)


def test_the_trials_cover_both_shortcuts() -> None:
    seen = set()
    for task in BANK.tasks.values():
        for model in MODELS:
            workspace, messages = _trial(task, model, 0)
            long = any(len(x.response.text) > 600 for x in workspace.exchanges if x.response is not None)
            read = any(c["name"] == "read" for m in messages for c in m.get("tool_calls", ()))
            seen.add("nothing cut" if not long else "cut, replayed" if read else "cut, never read")
    # The replay itself (a cut body read later) is tested in test_live.py (strict rules).
    assert seen >= {"nothing cut", "cut, never read"}
