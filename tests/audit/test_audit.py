"""The audit finds no passing exploit on our banks under the shipped rules, and can fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apiflow.agent import TrialSpec
from apiflow.agent import trial as trial_module
from apiflow.agent.trial import GRADING_RULES
from apiflow.authoring import audit as audit_module
from apiflow.authoring.audit import audit_bank, record_text, sample_tasks
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.cli import main
from apiflow.grading.spec import AnswerFieldSpec
from apiflow.models import make_model
from apiflow.models.adversarial import ADVERSARIES
from apiflow.runner import play_trial_sync

V1 = DEFAULT_BANK.parent / "v1"
V1_SAMPLE = 40
PUBLISHED_PREMATURE = "v1-w12-sub18"
"""A v1 task whose pre-seeded elevated token lets the key's token be sent before the mint
(passes ``published-1.0`` when every trial shows the bank's literals)."""


@pytest.fixture(scope="module")
def sample_bank():
    return load_bank(DEFAULT_BANK)


@pytest.fixture(scope="module")
def v1_bank():
    return load_bank(V1)


def play(bank, task, model: str, *, model_seed: int, seed: int, epoch: int):
    """One real trial of ``model`` on ``task``, recorded as ``run_trial`` records it."""
    return play_trial_sync(
        TrialSpec(
            task=task,
            world=bank.worlds[task.world],
            seed=seed,
            epoch=epoch,
            bank_name=bank.name,
            bank_hash=bank.hash,
            run_id="audit",
            model_slug="adv",
        ),
        make_model(model, task, model_seed),
    )


def test_sample_bank_all_tasks_no_exploit(sample_bank) -> None:
    report = audit_bank(sample_bank, epochs=2)
    assert report.rules == GRADING_RULES == "apiflow-1.1"
    assert report.sound, report.passing()
    ran = {adv for adv, _, _ in report.trials}
    assert ran == set(ADVERSARIES)  # every family exercised on the sample bank
    assert sum(report.trials.values()) >= 2 * 150


def test_v1_sample_no_exploit_even_under_published_rules(v1_bank) -> None:
    report = audit_bank(v1_bank, sample=V1_SAMPLE)
    assert len({t.split("-")[1] for t in report.tasks}) == 13  # the sample spans every world
    assert report.sound, report.passing()
    assert report.passing("published-1.0") == []  # per-trial canaries refuse the replays on their own


@pytest.fixture
def fixed_canaries(monkeypatch):
    """The harness as it was before per-trial canaries: every trial shows the bank's literals."""
    monkeypatch.setattr(trial_module, "canary_literals", lambda task, spec: frozenset())


def test_without_per_trial_canaries_the_forward_rule_still_holds(v1_bank, fixed_canaries) -> None:
    only = {"task_ids": [PUBLISHED_PREMATURE], "adversaries": ["premature"]}
    assert audit_bank(v1_bank, **only).sound  # apiflow-1.1: a value used before it was received
    loose = audit_bank(v1_bank, rules="published-1.0", **only)  # the looser rule set lets it through
    assert not loose.sound
    assert loose.passing() == [
        {"rules": "published-1.0", "adversary": "premature", "task": PUBLISHED_PREMATURE, "epoch": 1}
    ]


def test_a_sabotaged_grader_fails_the_audit(sample_bank, monkeypatch, fixed_canaries) -> None:
    real = audit_module.grade

    def answers_only(predicates, checkpoints, constraints, evidence, *, rules):
        # A grader bug that forgets G1 and answer provenance: the card alone decides.
        cards = [p for p in predicates if isinstance(p, AnswerFieldSpec)]
        return real(cards, checkpoints, constraints, evidence, rules="published-1.0")

    monkeypatch.setattr(audit_module, "grade", answers_only)
    report = audit_bank(sample_bank, adversaries=["answer-key", "skip-step", "fabricate"])
    cheats = {e["adversary"] for e in report.passing()}
    assert cheats == {"answer-key", "skip-step"}  # fabricated cards still fail the comparator


def test_audit_verdicts_are_the_verdicts_real_trials_record(sample_bank) -> None:
    bank = sample_bank
    for name in ("apiflow/adv:abstain-clarify", "apiflow/adv:replay", "apiflow/oracle"):
        for task in list(bank.tasks.values())[:4]:
            record = play(bank, task, name, model_seed=11, seed=0, epoch=1)
            assert record.apiflow.grader == GRADING_RULES
            assert record.verifier is not None and record.verifier["metadata"]["rules"] == GRADING_RULES
            assert record.passed is (name == "apiflow/oracle"), (name, task.id, record.failure_reason)


def test_cli_passes_on_the_sample_bank_and_writes_the_record(tmp_path: Path, capsys) -> None:
    out = tmp_path / "audit.json"
    assert main(["bank", "audit", str(DEFAULT_BANK), "--json", str(out), "--replay-epochs", "2", "--no-hostile"]) == 0
    text = capsys.readouterr().out
    assert "exploit          world authenticati" in text and "answer-key       w01" in text
    assert "AUDIT PASSED" in text and "refs" in text
    record = json.loads(out.read_text())
    assert record["sound"] and record["passes"] == {"apiflow-1.1": 0, "published-1.0": 0}
    assert {r["adversary"] for r in record["rows"]} == set(ADVERSARIES)
    refs = next(c for c in record["replay_values"]["classes"] if c["class"] == "refs")
    assert refs["shared_between_trials"] == 0 and refs["distinct"] == refs["seen"]


def test_cli_exit_code_names_the_exploit(capsys, fixed_canaries) -> None:
    # the 7 tasks first in hash order include PUBLISHED_PREMATURE (6th): a small, fixed sample
    code = main(["bank", "audit", str(V1), "--sample", "7", "--rules", "published-1.0", "--no-hostile"])
    text = capsys.readouterr().out
    assert code == 1
    assert f"EXPLOIT premature passes {PUBLISHED_PREMATURE} (epoch 1) under published-1.0" in text
    assert "AUDIT FAILED" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--epochs", "0"], "--epochs must be between 1 and 100"),
        (["--sample", "0"], "--sample must be at least 1"),
        (["--rules", "loose-9"], "unknown grading rule set 'loose-9'"),
    ],
)
def test_cli_bad_input_is_one_line(argv, message, capsys) -> None:
    assert main(["bank", "audit", str(DEFAULT_BANK), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_committed_sample_record_reproduces() -> None:
    committed = (DEFAULT_BANK.parent / "sample.audit.json").read_text()
    record = json.loads(committed)
    bank = load_bank(DEFAULT_BANK)
    report = audit_bank(bank, epochs=record["epochs"], seed=record["seed"])
    fresh = report.as_dict()
    from apiflow.authoring.replay_values import measure

    figures = measure(bank, list(bank.tasks.values()), record["replay_values"]["epochs"])
    fresh["replay_values"] = {
        "epochs": record["replay_values"]["epochs"],
        "classes": [v.as_dict() for v in figures],
    }
    assert record_text(fresh) == committed


def test_committed_v1_record_is_of_this_bank_and_sound(v1_bank) -> None:
    record = json.loads((V1.parent / "v1.audit.json").read_text())
    assert record["bank_hash"] == v1_bank.hash and record["tasks"] == len(v1_bank.tasks)
    assert record["sound"] and record["passes"]["apiflow-1.1"] == 0


def test_informational_probes_are_reported_but_never_fail_the_audit(v1_bank) -> None:
    chains = [t for t in sorted(v1_bank.tasks) if "-w11-chain-" in t]
    report = audit_bank(v1_bank, task_ids=chains, adversaries=["skip-middle"])
    probes = report.passing(informational=True)
    assert probes and report.sound  # w11 chains let a stored receipt of an earlier segment go unchecked
    assert report.as_dict()["informational_passes"]["apiflow-1.1"] == len(probes)


@pytest.mark.parametrize(("model", "passes"), [("apiflow/oracle", True), ("apiflow/blank", False)])
def test_live_rules_pass_the_oracle_and_fail_the_blank_model(model, passes, sample_bank, v1_bank) -> None:
    for bank, tasks in (
        (sample_bank, list(sample_bank.tasks.values())),
        (v1_bank, sample_tasks(v1_bank, V1_SAMPLE)),
    ):
        for task in tasks:
            record = play(bank, task, model, model_seed=3, seed=3, epoch=2)
            assert record.passed is passes, (model, task.id, record.failure_reason)
