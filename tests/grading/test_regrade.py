"""Regrading the published fixtures: every scored trial determinable and in agreement."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from apiflow.cli import main
from apiflow.grading import evidence_from_transcript, generation_of, grade, specs_from_verifier
from apiflow.grading.regrade import regrade

from .helpers import Script, card

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "transcripts"
KIMI_K3 = FIXTURES / "kimi-k3" / "v56-w02-sub13-t3.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_all_scored_fixtures_are_determinable_and_agree() -> None:
    summary = regrade([FIXTURES], workers=1)
    assert (summary.files, summary.unscored, summary.determinable, summary.indeterminate, summary.errors) == (
        42,
        1,
        41,
        0,
        0,
    )
    assert (summary.verdict_agree, summary.g1_agree, summary.g2_agree) == (41, 41, 41)
    assert summary.disagreements == []


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*/*.json")), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_fixture_reproduces_every_predicate_and_the_explanation(path: Path) -> None:
    trial = load(path)
    if trial["verifier"] is None:
        assert trial["verdict"] == "" and path.parent.name == "qwen3p7-plus"
        return
    verifier = trial["verifier"]
    g = grade(
        specs_from_verifier(verifier),
        [],
        [],
        evidence_from_transcript(trial),
        generation=generation_of(verifier),
    )
    recorded = verifier["metadata"]
    assert [r.passed for r in g.results] == [p["passed"] for p in recorded["predicates"]]
    assert g.verdict == trial["verdict"] and g.failure_reason == trial["failure_reason"]
    assert g.partial_score == pytest.approx(recorded["partial_score"])
    assert g.segment_diagnostics == recorded["sub_predicates"]["segment_diagnostics"]


def test_the_kimi_k3_pass_needs_the_newer_string_rule() -> None:
    trial = load(KIMI_K3)
    verifier = trial["verifier"]
    assert generation_of(verifier) == "newer"
    specs, evidence = specs_from_verifier(verifier), evidence_from_transcript(trial)
    assert grade(specs, [], [], evidence, generation="newer").verdict == "C"
    older = grade(specs, [], [], evidence, generation="original")
    assert (older.verdict, older.g1_passed, older.g2_passed) == ("I", True, False)


def test_process_pool_gives_the_same_summary(tmp_path: Path) -> None:
    one = regrade([FIXTURES], workers=1)
    two = regrade([FIXTURES], workers=2, chunk_files=5)
    assert one.to_json() == two.to_json()


def _published_like(
    tmp_path: Path, s: Script, predicates: list[dict], verdict: str, g1: bool, g2: bool
) -> Path:
    trial = {
        "schema_version": "1.0",
        "verdict": verdict,
        "messages": s.messages,
        "verifier": {
            "value": verdict,
            "metadata": {"sub_predicates": {"g1_passed": g1, "g2_passed": g2}, "predicates": predicates},
        },
    }
    path = tmp_path / "m" / "t-1.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(trial))
    return path


FLOW = {
    "label": "data_flow#1",
    "group": "G1",
    "passed": True,
    "segment": None,
    "detail": {
        "from_response_url_pattern": "v3/big",
        "from_body_key": "deep.key",
        "from_status": 200,
        "must_be_stored": False,
        "used_in_request_url_pattern": None,
    },
}
ANSWER = {
    "label": "answer.k == 'v'",
    "key": "answer_schema.k",
    "group": "G2",
    "segment": None,
    "passed": True,
    "detail": {"field": "k", "expected": "v", "comparator": "string"},
}


def test_key_beyond_a_cut_preview_never_read_is_indeterminate(tmp_path: Path) -> None:
    s = Script()
    s.execute({"url": "/v3/big"}, preview=json.dumps({"pad": "x" * 700, "key": "v"})[:600] + "…")
    s.say(card(k="v"))
    path = _published_like(tmp_path, s, [ANSWER, FLOW], "C", True, True)
    summary = regrade([path], workers=1)
    assert (summary.determinable, summary.indeterminate) == (0, 1)
    assert summary.unsettled == [{"path": str(path), "predicates": ["data_flow#1"]}]


def test_cli_prints_counts_writes_json_and_exits_by_agreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "summary.json"
    assert main(["regrade", str(FIXTURES), "--json", str(out), "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "trials read     42" in text and "verdict agree   41/41 (100.000%)" in text
    doc = json.loads(out.read_text())
    for key in (
        "files",
        "unscored",
        "determinable",
        "indeterminate",
        "verdict_agree",
        "g1_agree",
        "g2_agree",
        "disagreements",
    ):
        assert key in doc

    s = Script()
    s.execute({"url": "/v3/big"}, body={"key": "v"})
    s.say(card(k="wrong"))
    path = _published_like(tmp_path, s, [ANSWER, FLOW], "C", True, True)
    assert main(["regrade", str(path), "--json", str(out)]) == 1
    (item,) = json.loads(out.read_text())["disagreements"]
    assert item == {
        "path": str(path),
        "recorded": {"verdict": "C", "g1": True, "g2": True},
        "ours": {"verdict": "I", "g1": True, "g2": False},
        "predicate": "answer.k == 'v'",
    }


def test_cli_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["regrade", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["regrade", str(FIXTURES), "--workers", "0"]) == 2


def test_files_that_are_not_trials_are_counted_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "other.json").write_text("[1, 2]")
    summary = regrade([tmp_path], workers=1)
    assert (summary.files, summary.errors, summary.determinable) == (2, 2, 0)


def _scored() -> list[dict]:
    return [t for t in (load(p) for p in sorted(FIXTURES.glob("*/*.json"))) if t["verifier"]]


def _passed(trial: dict) -> list[bool | None]:
    verifier = trial["verifier"]
    evidence = evidence_from_transcript(trial)
    return [
        r.passed
        for r in grade(
            specs_from_verifier(verifier), [], [], evidence, generation=generation_of(verifier)
        ).results
    ]


def test_string_encoded_arguments_grade_like_objects() -> None:
    for trial in _scored():
        expected = _passed(trial)
        for message in trial["messages"]:
            for call in message.get("tool_calls") or ():
                call["arguments"] = {
                    k: json.dumps(v) if isinstance(v, dict) else v for k, v in call["arguments"].items()
                }
        assert _passed(trial) == expected, trial["task_id"]


def test_malformed_and_cut_transcripts_never_raise() -> None:
    rng = random.Random(7)
    junk = [None, 5, [], [{"type": "text"}], "x", {"a": 1}]
    for trial in _scored():
        for _ in range(5):
            messages = copy.deepcopy(trial["messages"][: rng.randint(0, len(trial["messages"]))])
            for message in messages:
                if rng.random() < 0.05:
                    message["content"] = rng.choice(junk)
                if rng.random() < 0.02:
                    message["tool_calls"] = rng.choice(junk)
                for call in message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else ():
                    if isinstance(call, dict) and rng.random() < 0.05:
                        call["arguments"] = rng.choice([*junk, {"request": 5}, {"target": {"kind": 1}}])
            _passed({**trial, "messages": messages})


@pytest.mark.parametrize(
    "request_content",
    [
        {"method": "post", "url": "/v1/a", "headers": {"X": "y"}, "body": {"k": 1}},
        {"method": 7, "url": ["not", "a", "string"]},
        {},
    ],
    ids=["lower-case method", "non-string method and url", "empty"],
)
def test_replayed_exchange_is_exchange_sent(request_content: dict) -> None:
    # The replay writes Exchange.sent's normalisation out positionally (one call per exchange); it must
    # build the very exchange Exchange.sent builds, for odd requests too.
    from apiflow.grading.evidence import Exchange
    from apiflow.grading.transcript import _Builder

    builder = _Builder()
    for _ in range(4):
        builder._sent(
            request_content, 200, {"id": 1}, None, None, "request:req-1", "request:req-1/response:resp-1"
        )
    expected = Exchange.sent(
        3,
        request_content,
        status=200,
        response_body={"id": 1},
        preview=None,
        network_error=None,
        request_ref="request:req-1",
        response_ref="request:req-1/response:resp-1",
    )
    assert builder.exchanges[3] == expected
    assert builder.responses == 4


def _shuffled(messages: list, rng: random.Random) -> list:
    """The fixture's messages with some ids, names and results dropped, repeated or moved."""
    messages = copy.deepcopy(messages)
    for message in messages:
        for call in message.get("tool_calls") or ():
            if rng.random() < 0.1:
                call["id"] = rng.choice([None, "dup"])
        if message.get("role") == "tool" and rng.random() < 0.1:
            message["tool_call_id"] = rng.choice([None, "dup", "missing"])
    if messages and rng.random() < 0.5:
        messages.insert(rng.randrange(len(messages)), messages.pop(rng.randrange(len(messages))))
    return messages


def test_replay_pairs_results_as_the_plain_pairing_does() -> None:
    # ``_Builder.replay`` writes the pairing of ``_tool_calls`` out inline: same pairs, same order,
    # and every unanswered call counted.
    from apiflow.grading.transcript import _Builder, _tool_calls

    class Recording(_Builder):
        def feed(self, call: dict, result: dict | None) -> None:
            fed.append((call, result))
            super().feed(call, result)

    rng = random.Random(11)
    for path in sorted(FIXTURES.glob("*/*.json")):
        for variant in range(4):
            messages = load(path)["messages"]
            if variant:
                messages = _shuffled(messages, rng)
            fed: list = []
            builder = Recording()
            builder.replay(messages)
            pairs = list(_tool_calls(messages))
            answered = [(c, r) for c, r in pairs if r is not None]
            assert len(fed) == len(answered)
            assert all(a[0] is b[0] and a[1] is b[1] for a, b in zip(fed, answered, strict=True))
            assert builder.tool_calls == len(pairs)
