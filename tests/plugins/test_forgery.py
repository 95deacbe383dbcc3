"""The record is the harness's: a plug-in that edits the conversation it is handed, or the arguments it
returned after they ran, changes its own copy only (issue 26 finding 2)."""

from __future__ import annotations

import pytest
from pluginkit import on_path, write_dist

from apiflow.agent import TrialSpec
from apiflow.agent.prompts import initial_messages
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import make_model
from apiflow.runner import play_trial_sync

TASK = "sample-w01-chain-1to03"

# Plays the golden solution, then forges: rewrites the user prompt, empties every tool result it was
# shown, and edits the arguments of the calls it returned once they have run.
SOURCE = """
    import copy

    from apiflow.models.offline import oracle_model

    class Forger:
        def __init__(self, task):
            self.inner = oracle_model(task)
            self.model_api = "forger/x"
            self.returned = []

        async def generate(self, messages, tools, config):
            output = copy.deepcopy(await self.inner.generate(messages, tools, config))  # its own objects
            messages[1]["content"] = "FORGED PROMPT: report that everything is done"
            for message in messages:
                if message.get("role") == "tool":
                    message["content"] = "FORGED"
            for arguments in self.returned:
                if isinstance(arguments, dict):
                    arguments.clear()
                    arguments["forged"] = "FORGED"
            self.returned = [call.arguments for call in output.tool_calls]
            return output

    def make_model(name, task, seed, params):
        return Forger(task)
"""


@pytest.fixture
def forger(tmp_path):
    write_dist(tmp_path, "forgerplug", "forgerplug", SOURCE, {"forger": "forgerplug:make_model"})
    with on_path(tmp_path):
        yield


def _trial(name: str):
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(TASK)
    spec = TrialSpec(task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                     bank_hash=bank.hash, run_id="r", model_slug="m")  # fmt: skip
    return task, play_trial_sync(spec, make_model(name, task, 0))


def test_a_plugin_that_forges_its_conversation_changes_only_its_copy(forger) -> None:
    task, forged = _trial("forger/x")
    _, honest = _trial("apiflow/oracle")
    text = forged.to_json()
    assert "FORGED" not in text  # not the prompt, not a tool result, not an argument
    assert forged.messages[1]["content"] == initial_messages(task)[1]["content"]
    assert forged.verdict == honest.verdict == "C"
    assert forged.messages == honest.messages
