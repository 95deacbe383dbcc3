"""The exported logs read by Inspect AI's own reader (``inspect_ai.log``) and its CLI.

Skipped, with the reason shown, where inspect_ai is not installed (it is the ``inspect`` extra).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EPOCHS, PUBLISHED, TASKS, records_by_key

inspect_log = pytest.importorskip(
    "inspect_ai.log", reason="inspect_ai is not installed (the `inspect` extra)"
)


def _logs(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.eval"))


def test_one_sample_per_trial_with_epochs_model_and_usage(own_logs, own_trials):
    records = records_by_key(own_trials)
    seen = set()
    for path in _logs(own_logs):
        log = inspect_log.read_eval_log(str(path))
        assert log.version == 2
        assert log.status == "cancelled"  # a chain and the unscored copy have one epoch only: incomplete
        models = {
            r["model_api"]
            for r in records.values()
            if r["model"] == log.eval.metadata["apiflow_export"]["model"]
        }
        assert {log.eval.model} == models
        assert log.eval.task == "apiflow/sample" and log.eval.config.epochs == EPOCHS
        ids = [(s.id, s.epoch) for s in log.samples]
        assert len(ids) == len(set(ids)) == log.results.total_samples
        for sample in log.samples:
            record = records[(log.eval.metadata["apiflow_export"]["model"], sample.id, sample.epoch)]
            seen.add((record["model"], sample.id, sample.epoch))
            usage = sample.model_usage[log.eval.model]
            assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
                record["tokens"]["input"], record["tokens"]["output"], record["tokens"]["total"])  # fmt: skip
            assert usage.input_tokens_cache_read == record["apiflow"]["tokens"]["cache_read"]
            assert sample.total_time == record["duration_s"] and sample.uuid == record["apiflow"]["trial_id"]
    assert seen == set(records)


def test_scores_verdicts_predicates_and_unscored_errors(own_logs, own_trials):
    records = records_by_key(own_trials)
    unscored = 0
    for path in _logs(own_logs):
        log = inspect_log.read_eval_log(str(path))
        model = log.eval.metadata["apiflow_export"]["model"]
        scored = [r for r in records.values() if r["model"] == model and r["verdict"]]
        (result,) = log.results.scores
        assert result.scored_samples == len(scored)
        assert result.metrics["accuracy"].value == pytest.approx(
            sum(r["verdict"] == "C" for r in scored) / len(scored)
        )
        for sample in log.samples:
            record = records[(model, sample.id, sample.epoch)]
            if record["verdict"] == "":
                unscored += 1
                assert sample.scores is None and sample.error is not None
                assert "provider_error" in sample.error.message
                continue
            assert sample.error is None
            score = sample.scores["apiflow_grader"]
            assert score.value == record["verdict"]
            assert score.value in (inspect_scorer().CORRECT, inspect_scorer().INCORRECT)
            assert score.explanation == record["failure_reason"]
            assert {p["group"] for p in score.metadata["predicates"]} <= {"G1", "G2"}
            assert score.metadata["sub_predicates"]["g2_passed"] == sample.metadata["g2_passed"]
            assert sample.metadata["termination"] == record["apiflow"]["termination"]
            if record["apiflow"]["termination"] == "limit":
                assert sample.limit is not None and sample.limit.type == "message"
    assert unscored == 1


def inspect_scorer():
    import inspect_ai.scorer

    return inspect_ai.scorer


def test_the_conversation_is_inspect_chat_messages(own_logs, own_trials):
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser

    records = records_by_key(own_trials)
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant,
             "tool": ChatMessageTool}  # fmt: skip
    tool_errors = unparsed = 0
    for path in _logs(own_logs):
        log = inspect_log.read_eval_log(str(path))
        model = log.eval.metadata["apiflow_export"]["model"]
        for sample in log.samples:
            messages = records[(model, sample.id, sample.epoch)]["messages"]
            assert len(sample.messages) == len(messages)
            for ours, theirs in zip(messages, sample.messages, strict=True):
                assert isinstance(theirs, kinds[ours["role"]])
                if ours["role"] == "assistant":
                    calls = ours.get("tool_calls") or []
                    assert [(c.id, c.function) for c in theirs.tool_calls or []] == [
                        (c["id"], c["name"]) for c in calls]  # fmt: skip
                    for call, theirs_call in zip(calls, theirs.tool_calls or [], strict=True):
                        if isinstance(call["arguments"], dict):
                            assert (
                                theirs_call.arguments == call["arguments"] and theirs_call.parse_error is None
                            )
                        else:  # the erratic model's truncated JSON: Inspect's parse_error says so
                            unparsed += 1
                            assert (
                                theirs_call.arguments == {}
                                and call["arguments"][:50] in theirs_call.parse_error
                            )
                    assert theirs.text == "".join(b["text"] for b in ours["content"] if b["type"] == "text")
                elif ours["role"] == "tool":
                    assert (theirs.tool_call_id, theirs.function, theirs.text) == (
                        ours["tool_call_id"], ours["function"], ours["content"])  # fmt: skip
                    if "error" in ours:
                        tool_errors += 1
                        assert (theirs.error.type, theirs.error.message) == (
                            ours["error"]["type"],
                            ours["error"]["message"],
                        )
                else:
                    assert theirs.text == ours["content"]
    assert tool_errors > 0 and unparsed > 0  # the erratic model's failed calls are in there


def test_a_complete_grid_is_a_successful_log_that_streams_whole(own_trials, tmp_path):
    import shutil

    from apiflow.cli import main

    whole = tmp_path / "whole"
    for path in (own_trials / "apiflow-oracle").glob("*.json"):
        if path.name.rsplit("-t", 1)[0] in TASKS:
            (whole / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, whole / path.parent.name / path.name)
    assert main(["transcripts", "export", "--format", "inspect", str(whole), str(tmp_path / "o.eval")]) == 0
    header = inspect_log.read_eval_log(str(tmp_path / "o.eval"), header_only=True)
    assert header.status == "success" and header.eval.metadata["apiflow_export"]["complete"]
    streamed = list(inspect_log.read_eval_log_samples(str(tmp_path / "o.eval"), all_samples_required=True))
    assert sorted((s.id, s.epoch) for s in streamed) == sorted(
        (t, e) for t in TASKS for e in range(1, EPOCHS + 1)
    )


def test_samples_stream_and_summaries_match(own_logs):
    for path in _logs(own_logs):
        header = inspect_log.read_eval_log(str(path), header_only=True)
        assert header.samples is None
        streamed = list(inspect_log.read_eval_log_samples(str(path), all_samples_required=False))
        summaries = inspect_log.read_eval_log_sample_summaries(str(path))
        assert len(streamed) == len(summaries) == header.results.total_samples
        assert [(s.id, s.epoch) for s in streamed] == [(s.id, s.epoch) for s in summaries]
        assert (
            sum(s.error is not None for s in summaries)
            == header.results.total_samples - header.results.completed_samples
        )


def test_published_logs_read_with_reasoning_and_string_arguments(tmp_path):
    from apiflow.cli import main

    assert main(["transcripts", "export", "--format", "inspect", str(PUBLISHED), str(tmp_path)]) == 0
    samples = [s for p in _logs(tmp_path) for s in inspect_log.read_eval_log(str(p)).samples]
    assert len(samples) == 42
    reasoning = [c for s in samples for m in s.messages if not isinstance(m.content, str)
                 for c in m.content if c.type == "reasoning"]  # fmt: skip
    assert reasoning
    assert sum(s.error is not None for s in samples) == 1


def test_inspect_log_dump_reads_it(own_logs):
    path = _logs(own_logs)[0]
    dumped = subprocess.run([sys.executable, "-m", "inspect_ai", "log", "dump", str(path)],
                            capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    log = json.loads(dumped.stdout)
    assert log["eval"]["metadata"]["apiflow_export"]["format"] == 1
    assert len(log["samples"]) == log["results"]["total_samples"] > 0


def test_a_log_inspect_wrote_itself_is_refused_by_ingest(tmp_path, capsys):
    from apiflow.cli import main

    log = inspect_log.EvalLog(
        eval=inspect_log.EvalSpec(created="2026-12-01T00:00:00+00:00", task="t", model="m",
                                  dataset=inspect_log.EvalDataset(), config=inspect_log.EvalConfig()),
    )  # fmt: skip
    inspect_log.write_eval_log(log, str(tmp_path / "theirs.eval"))
    assert (
        main(["transcripts", "ingest", str(tmp_path / "theirs.eval"), "--out", str(tmp_path / "x.parquet")])
        == 2
    )
    assert "not written by `apiflow transcripts export`" in capsys.readouterr().err
