"""Per-trial canaries: a bank value shows a different form in every trial, and a replayed one is refused."""

from __future__ import annotations

import asyncio
import json
import re

from apiflow.agent.trial import trial_evidence
from apiflow.authoring.replay_values import measure
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.grading import grade
from apiflow.models import make_model
from apiflow.world.canaries import REPLAYED, SALTED, SCOPE_HEADER, CanaryCodec, suffix
from apiflow.world.http import HttpRequest, HttpResponse

LITERALS = ["smkgr-2c8a6c-736", "tk_ember_18c65b", "committed"]


def test_suffixes_are_per_trial_and_deterministic() -> None:
    assert suffix(1, "smkgr-2c8a6c-736") == suffix(1, "smkgr-2c8a6c-736")
    many = {suffix(seed, "smkgr-2c8a6c-736") for seed in range(2000)}
    assert len(many) == 2000 and all(re.fullmatch(r"[0-9a-z]{6}", s) for s in many)


def test_only_distinctive_literals_are_salted() -> None:
    codec = CanaryCodec(LITERALS, 7)
    assert set(codec.forward) == {"smkgr-2c8a6c-736", "tk_ember_18c65b"}  # never a plain word


def test_outbound_salts_body_text_and_headers_and_says_so() -> None:
    codec = CanaryCodec(LITERALS, 7)
    body = {"ref": "smkgr-2c8a6c-736", "status": "committed", "note": "token tk_ember_18c65b ok"}
    out = codec.outbound(HttpResponse(200, {"link": "</x?ref=smkgr-2c8a6c-736>"}, body, json.dumps(body)))
    salted = codec.forward["smkgr-2c8a6c-736"]
    assert out.body["ref"] == salted and out.body["status"] == "committed"
    assert codec.forward["tk_ember_18c65b"] in out.body["note"]
    assert json.loads(out.text) == out.body and salted in out.headers["link"]
    assert out.headers[SCOPE_HEADER[0]] == SCOPE_HEADER[1]
    assert SALTED.fullmatch(salted)


def test_inbound_takes_this_trials_form_back_and_marks_replays() -> None:
    codec, other = CanaryCodec(LITERALS, 7), CanaryCodec(LITERALS, 8)
    mine, theirs = codec.forward["tk_ember_18c65b"], other.forward["tk_ember_18c65b"]
    for sent, seen in (
        (mine, "tk_ember_18c65b"),  # this trial's form: the world sees its bank value
        ("tk_ember_18c65b", "tk_ember_18c65b" + REPLAYED),  # copied from the answer key
        (theirs, "tk_ember_18c65b" + REPLAYED),  # copied from another trial
    ):
        request = HttpRequest("GET", "/v3/x", {"authorization": f"Bearer {sent}"}, {"ref": sent})
        world_side = codec.inbound(request)
        assert world_side.headers["authorization"] == f"Bearer {seen}" and world_side.body == {"ref": seen}


def test_patterns_follow_the_salt() -> None:
    codec = CanaryCodec(["smk-e36f-0db4"], 3)
    pattern = codec.salt_pattern(r"v3/smoke\-reports/smk\-e36f\-0db4/engines(?:\?|$)")
    assert re.search(pattern, f"/v3/smoke-reports/{codec.forward['smk-e36f-0db4']}/engines")
    assert not re.search(pattern, "/v3/smoke-reports/smk-e36f-0db4/engines")


def _play(task, name, epoch):
    bank = load_bank(DEFAULT_BANK)
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(
            trial_evidence(task, bank.worlds[task.world], make_model(name, task, epoch), seed=0, epoch=epoch)
        )
    finally:
        loop.close()


def test_the_oracle_reads_the_per_trial_values_and_an_old_token_is_refused() -> None:
    task = load_bank(DEFAULT_BANK).task("sample-w01-sub06")
    one, two = _play(task, "apiflow/oracle", 1), _play(task, "apiflow/oracle", 2)
    for played in (one, two):
        spec = played.task
        assert grade(
            spec.predicates, spec.checkpoints, spec.constraints, played.evidence, rules="apiflow-1.1"
        ).passed
    assert one.task.predicates != two.task.predicates  # expected values differ per trial
    # the answer key's literal token, sent without the mint, is refused by the world
    replay = _play(task, "apiflow/adv:replay", 1).evidence
    statuses = [e.status for e in replay.exchanges]
    assert statuses and all(s in (401, 403, 404, 409) for s in statuses), statuses


def test_replayable_values_are_distinct_across_trials() -> None:
    bank = load_bank(DEFAULT_BANK)
    figures = {v.name: v for v in measure(bank, list(bank.tasks.values()), epochs=3)}
    assert figures["refs"].shared == 0 and figures["refs"].distinct == figures["refs"].seen
    assert figures["canaries"].shared == 0 and figures["canaries"].seen > 0
    assert figures["fixed-card"].bits_between_trials == 0.0  # what the task gives stays as given


def test_values_replayed_from_another_epoch_are_refused() -> None:
    bank = load_bank(DEFAULT_BANK)
    task = bank.task("sample-w01-sub06")
    oracle = make_model("apiflow/oracle", task, 1)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(trial_evidence(task, bank.worlds[task.world], oracle, seed=0, epoch=1))
        epoch_one = oracle.learned_values()
        assert epoch_one  # the oracle read its per-trial values off the responses
        from apiflow.models.adversarial import adversary_model

        replayer = adversary_model("epoch-replay", task, 2, {}, epoch_one)
        played = loop.run_until_complete(
            trial_evidence(task, bank.worlds[task.world], replayer, seed=0, epoch=2)
        )
    finally:
        loop.close()
    sent = " ".join(e.text for e in played.evidence.exchanges) + played.evidence.answer_text
    assert any(v in sent for v in epoch_one.values())  # it did send and report epoch 1's forms
    spec = played.task
    graded = grade(
        spec.predicates, spec.checkpoints, spec.constraints, played.evidence, rules="published-1.0"
    )
    assert not graded.g1_passed and not graded.g2_passed  # refused even by the published rules
