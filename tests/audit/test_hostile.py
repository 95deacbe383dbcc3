"""The harness section of ``apiflow bank audit``: hostile agents (``apiflow/hostile:*``) attack the
harness and every check holds on the sample bank; with a defence taken out, the audit names the
check that gave way, so it is shown to catch each class (issue 26)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from apiflow.agent import loop as loop_module
from apiflow.authoring.hostile_audit import audit_hostile, render_hostile
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.cli import main
from apiflow.errors import UsageError
from apiflow.exact import exact_bytes
from apiflow.models import check_model_name, make_model
from apiflow.models.adversarial.hostile import HOSTILE_PREFIX, HOSTILES
from apiflow.models.base import ProviderError
from apiflow.models.plugins import PluginModel
from apiflow.tools.toolbox import Toolbox

TASKS = ["sample-w01-sub01", "sample-w01-chain-1to03"]
HAS_MCP = importlib.util.find_spec("mcp") is not None


@pytest.fixture(scope="module")
def bank():
    return load_bank(DEFAULT_BANK)


@pytest.fixture(scope="module")
def full(bank):
    return audit_hostile(bank)


def _failed(report, name: str) -> set[str]:
    return {e["check"] for e in report.exploits if e["adversary"] == name}


# -- the defences, taken out one at a time ----------------------------------------------------------


def _no_agent_copies(monkeypatch) -> None:
    """The loop hands agent code the live transcript and keeps the objects it returned."""
    monkeypatch.setattr(loop_module, "is_agent_code", lambda model: False)


def _keys_over_live_calls(monkeypatch) -> None:
    """The grade key is taken over the call objects at grading time, not when each call ran."""

    def snapshots(self: Toolbox) -> list[bytes | None] | None:
        return [exact_bytes(call) for call in self.calls] if self.__dict__.get("_lazy") else None

    def keep(self: Toolbox, value: Any) -> None:
        self.__dict__["_lazy"] = value is not None

    monkeypatch.setattr(Toolbox, "snapshots", property(snapshots, keep), raising=False)


def _no_fault_conversion(monkeypatch) -> None:
    """Whatever a plug-in's ``generate`` raises or returns passes through ``PluginModel`` as it is."""

    async def turn(self: PluginModel, messages: Any, tools: Any, config: Any) -> Any:
        return await self.inner.generate(messages, tools, config)

    monkeypatch.setattr(PluginModel, "_turn", turn)


def _no_agent_thread(monkeypatch) -> None:
    """A plug-in's ``generate`` runs on the trial's own event loop."""

    async def generate(self: PluginModel, messages: Any, tools: Any, config: Any) -> Any:
        return await self._turn(messages, tools, config)

    monkeypatch.setattr(PluginModel, "generate", generate)


# -- the adversaries are models -------------------------------------------------------------------


def test_every_hostile_adversary_is_a_model_and_untrusted_agent_code(bank) -> None:
    task = bank.task(TASKS[0])
    for name, hostile in HOSTILES.items():
        if hostile.harm == 4:
            continue  # an external agent: its own process, below
        model = make_model(HOSTILE_PREFIX + name, task, 0)
        assert type(model) is PluginModel and loop_module.is_agent_code(model), name
        assert model.model_api == HOSTILE_PREFIX + name
    with pytest.raises(UsageError, match="unknown hostile adversary 'nope'; known: poison, rewrite"):
        check_model_name(f"{HOSTILE_PREFIX}nope")


@pytest.mark.skipif(not HAS_MCP, reason="needs the mcp extra")
def test_the_early_leaver_is_an_external_agent(bank) -> None:
    model = make_model(f"{HOSTILE_PREFIX}exit-early", bank.task(TASKS[0]), 0)
    assert model.model_api == "external/hostile-exit-early"


# -- the section holds ----------------------------------------------------------------------------


def test_the_section_holds_on_the_sample_bank_for_every_hostile_adversary(bank, full) -> None:
    assert full.sound, full.exploits
    assert full.tasks == sorted(bank.tasks) and list(full.rows) == list(HOSTILES)
    for name, row in full.rows.items():
        if row.not_run is not None:
            assert name == "exit-early" and not HAS_MCP
            continue
        assert (row.trials, row.scored, row.passed) == (len(bank.tasks), len(bank.tasks), 0), name
    assert full.seconds < 60
    table = "\n".join(render_hostile(full))
    assert "hostile          class  trials  scored  passed  checks failed" in table
    assert "poison               1      13      13       0  -" in table


def test_an_adversary_whose_extra_is_missing_is_reported_not_run(bank, monkeypatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    report = audit_hostile(bank, adversaries=["exit-early"], task_ids=TASKS)
    row = report.rows["exit-early"]
    assert report.sound and row.trials == 0
    assert row.not_run == "not run: needs the mcp extra (pip install 'apiflow[mcp]')"
    assert "exit-early           4  not run: needs the mcp extra" in "\n".join(render_hostile(report))


# -- and catches each class once its defence is gone ----------------------------------------------


def test_class_1_a_grade_filed_under_another_trials_key_is_caught(bank, monkeypatch) -> None:
    _no_agent_copies(monkeypatch)
    _keys_over_live_calls(monkeypatch)
    report = audit_hostile(bank, adversaries=["poison"], task_ids=TASKS)
    assert _failed(report, "poison") == {"others-unchanged", "record-untouched"}
    assert {e["task"] for e in report.exploits} == set(TASKS)
    assert "the oracle after it did not pass ('I')" in {e["detail"] for e in report.exploits}


def test_class_1_each_of_its_two_defences_holds_alone(bank, monkeypatch) -> None:
    _keys_over_live_calls(monkeypatch)  # the loop's copies still keep the model off what was keyed
    assert audit_hostile(bank, adversaries=["poison"], task_ids=TASKS).sound
    monkeypatch.undo()
    _no_agent_copies(monkeypatch)  # the run-time snapshots still key what ran: only its record is forged
    report = audit_hostile(bank, adversaries=["poison"], task_ids=TASKS)
    assert _failed(report, "poison") == {"record-untouched"}


def test_class_2_a_rewritten_transcript_is_caught(bank, monkeypatch) -> None:
    _no_agent_copies(monkeypatch)
    report = audit_hostile(bank, adversaries=["rewrite"], task_ids=TASKS)
    assert _failed(report, "rewrite") == {"record-untouched"}
    assert {e["detail"] for e in report.exploits} == {"HOSTILE-FORGERY in a user message"}


@pytest.mark.parametrize("name", ["raise", "provider-error", "interrupt", "exit"])
def test_class_3_a_raise_that_unscores_the_trial_is_caught(bank, monkeypatch, name) -> None:
    _no_fault_conversion(monkeypatch)
    report = audit_hostile(bank, adversaries=[name], task_ids=TASKS)
    assert _failed(report, name) == {"scored"} and report.rows[name].scored == 0


@pytest.mark.parametrize("name", ["return-none", "return-dict", "bad-str"])
def test_class_3_a_turn_that_breaks_the_harness_is_caught(bank, monkeypatch, name) -> None:
    _no_fault_conversion(monkeypatch)
    _no_agent_copies(monkeypatch)  # the loop would still name a turn that breaks on reading as the agent's
    report = audit_hostile(bank, adversaries=[name], task_ids=TASKS)
    assert _failed(report, name) == {"scored"}
    assert {e["detail"] for e in report.exploits} == {"ended as harness_error"}


@pytest.mark.skipif(not HAS_MCP, reason="needs the mcp extra")
def test_class_4_an_agent_leaving_before_it_played_is_caught(bank, monkeypatch) -> None:
    from apiflow.mcp import external

    monkeypatch.setattr(external, "AgentFault", ProviderError)  # leaving early was the provider's
    report = audit_hostile(bank, adversaries=["exit-early"], task_ids=TASKS)
    assert _failed(report, "exit-early") == {"scored"}
    assert {e["detail"] for e in report.exploits} == {"ended as provider_error"}


def test_class_9_a_model_that_blocks_the_trial_is_caught(bank, monkeypatch) -> None:
    _no_agent_thread(monkeypatch)
    report = audit_hostile(bank, adversaries=["sleep"], task_ids=TASKS[:1])
    assert _failed(report, "sleep") == {"clock"}
    assert report.exploits[0]["detail"].startswith("held the trial 3.0 s")


# -- the command ----------------------------------------------------------------------------------


def test_cli_runs_the_section_after_the_grader_section(capsys) -> None:
    assert main(["bank", "audit", str(DEFAULT_BANK), "--sample", "1"]) == 0
    text = capsys.readouterr().out
    assert text.index("exploit          world") < text.index("hostile agents (harness attacks): 11 trials")
    assert "sleep                9       1       1       0  -" in text
    assert "AUDIT PASSED" in text and "the harness held against every hostile agent" in text
    assert main(["bank", "audit", str(DEFAULT_BANK), "--sample", "1", "--no-hostile"]) == 0
    text = capsys.readouterr().out
    assert "hostile" not in text and "AUDIT PASSED" in text


def test_cli_exit_code_names_the_adversary_task_and_check(capsys, monkeypatch) -> None:
    _no_fault_conversion(monkeypatch)
    code = main(["bank", "audit", str(DEFAULT_BANK), "--sample", "1"])
    text = capsys.readouterr().out
    assert code == 1
    assert "raise                3       1       0       0  scored 1" in text
    assert "HARNESS EXPLOIT raise on sample-" in text and ": scored failed (ended as harness_error)" in text
    assert "HARNESS AUDIT FAILED" in text and "AUDIT PASSED" not in text
