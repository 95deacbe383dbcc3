"""``apiflow transcripts export --format inspect`` and the ingest of its logs, without inspect_ai:
the export is lossless (every record comes back exactly), deterministic, keeps unscored trials
apart from failures, and bad input is one line with exit 2."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from apiflow.analysis.table import load_table
from apiflow.cli import main
from apiflow.interop import read_samples, record_to_sample, sample_to_record

from .conftest import EPOCHS, MODELS, PUBLISHED, TASKS, records_by_key


def _exported(logs: list[Path]) -> dict[tuple, dict]:
    back = {}
    for log in logs:
        for sample in read_samples(log):
            record = sample_to_record(sample)
            back[(record["model"], record["task_id"], record["trial"])] = record
    return back


def _ingested(tmp_path: Path, *inputs: Path, name: str) -> pa.Table:
    out = tmp_path / f"{name}.parquet"
    assert main(["transcripts", "ingest", *map(str, inputs), "--out", str(out), "--workers", "1"]) == 0
    table = pq.read_table(out)
    keys = [k for k in ("model", "task_id", "trial") if k in table.column_names]
    return table.sort_by([(k, "ascending") for k in keys])


def test_one_log_per_model_and_every_record_comes_back_exactly(own_trials, own_logs):
    logs = sorted(own_logs.glob("*.eval"))
    assert len(logs) == len(MODELS)
    original = records_by_key(own_trials)
    assert _exported(logs) == original
    assert len(original) == len(MODELS) * len(TASKS) * EPOCHS + 2  # + the limit chain + the unscored copy


def test_published_transcripts_come_back_exactly(tmp_path):
    """42 published trials: string-encoded arguments, reasoning blocks, tool errors, an unscored one."""
    assert main(["transcripts", "export", "--format", "inspect", str(PUBLISHED), str(tmp_path / "logs")]) == 0
    logs = sorted((tmp_path / "logs").glob("*.eval"))
    assert _exported(logs) == records_by_key(PUBLISHED)
    assert len(logs) == len({m for m, _, _ in records_by_key(PUBLISHED)})


def test_ingest_of_the_logs_gives_the_rows_of_therecords_by_key(own_trials, own_logs, tmp_path):
    from_records = _ingested(tmp_path, own_trials, name="records")
    from_logs = _ingested(tmp_path, own_logs, name="logs")
    assert from_logs.schema == from_records.schema
    assert from_logs.equals(from_records)
    assert from_logs.filter(pc.field("harness")).num_rows == 1  # the unscored one stays unscored


def test_ingest_of_published_logs_gives_the_published_columns(tmp_path):
    assert main(["transcripts", "export", "--format", "inspect", str(PUBLISHED), str(tmp_path / "logs")]) == 0
    from_logs = _ingested(tmp_path, tmp_path / "logs", name="logs")
    assert from_logs.equals(_ingested(tmp_path, PUBLISHED, name="records"))
    assert from_logs.num_rows == 42 and from_logs.filter(pc.field("verdict") == "").num_rows == 1


def test_grid_store_exports_what_the_report_counts(own_grid, tmp_path):
    """A grid's store: stored trials once (a failed earlier attempt does not add a sample), and the
    never-finished trial as one unscored sample; its ingest equals the grid's own rows."""
    out = tmp_path / "grid-logs"
    assert main(["transcripts", "export", "--format", "inspect", str(own_grid), str(out)]) == 0
    from_logs = _ingested(tmp_path, out, name="grid")
    grid_rows = load_table([str(own_grid)])
    grid_rows = grid_rows.sort_by([("model", "ascending"), ("task_id", "ascending"), ("trial", "ascending")])
    assert from_logs.equals(grid_rows.select(from_logs.column_names).cast(from_logs.schema))
    unscored = [s for log in out.glob("*.eval") for s in read_samples(log) if "error" in s]
    assert len(unscored) == 1 and unscored[0]["scores"] is None
    assert unscored[0]["error"]["message"].startswith("unscored (provider_error): RateLimitError")


def test_scores_carry_the_verdict_and_the_predicates(own_logs, own_trials):
    records = records_by_key(own_trials)
    for log in own_logs.glob("*.eval"):
        for sample in read_samples(log):
            record = records[(sample["metadata"]["record"]["model"], sample["id"], sample["epoch"])]
            if record["verdict"] == "":
                assert sample["scores"] is None and "error" in sample
                continue
            ((name, score),) = sample["scores"].items()
            assert name == "apiflow_grader" and score["value"] == record["verdict"] in ("C", "I")
            assert score["explanation"] == record["failure_reason"]
            groups = {p["group"] for p in score["metadata"]["predicates"]}
            assert groups <= {"G1", "G2"} and groups
            assert sample["metadata"]["g1_passed"] == score["metadata"]["sub_predicates"]["g1_passed"]
            assert sample["metadata"]["termination"] == record["apiflow"]["termination"]
            assert "error" not in sample


def test_a_limit_is_the_samples_limit(own_logs):
    limited = [s for log in own_logs.glob("*.eval") for s in read_samples(log) if "limit" in s]
    assert len(limited) == 1
    assert limited[0]["limit"]["type"] == "message" and limited[0]["limit"]["limit"] == 6.0


def test_same_records_same_bytes(own_trials, tmp_path):
    for name in ("a", "b"):
        assert (
            main(["transcripts", "export", "--format", "inspect", str(own_trials), str(tmp_path / name)]) == 0
        )
    for log in (tmp_path / "a").glob("*.eval"):
        assert log.read_bytes() == (tmp_path / "b" / log.name).read_bytes()


def test_what_inspect_types_cannot_say_is_kept_verbatim():
    odd = [
        {"role": "assistant", "content": [{"type": "image", "url": "x"}],
         "tool_calls": [{"id": "c1", "name": "execute", "arguments": "{not json"}]},
        {"role": "tool", "content": "", "tool_call_id": "c1", "function": "execute",
         "error": {"type": "quota", "message": "no"}},
        {"role": "assistant", "content": None, "extra": 1},
        "not even a message",
    ]  # fmt: skip
    trial = {"schema_version": "1.0", "model": "m", "model_api": "p/m", "task_id": "x-w01-sub01", "trial": 1,
             "verdict": "I", "passed": False, "failure_reason": "f", "tokens": {}, "duration_s": 1.0,
             "messages": odd, "verifier": {"scorer": "s", "value": "I", "explanation": "f", "metadata": {},
                                          "extra": True},
             "provenance": {"epoch": 1, "created": "not a time"}}  # fmt: skip
    sample = record_to_sample(trial)
    assert sample_to_record(orjson.loads(orjson.dumps(sample))) == trial
    assert [m["role"] for m in sample["messages"]] == ["assistant", "tool", "assistant", "user"]
    assert sample["messages"][1]["error"]["type"] == "unknown"  # Inspect's closed set


def test_a_folder_of_one_model_can_be_one_eval_file(own_trials, tmp_path):
    out = tmp_path / "oracle.eval"
    assert main(["transcripts", "export", "--format", "inspect", str(own_trials), str(out),
                 "--model", "apiflow-oracle"]) == 0  # fmt: skip
    assert {s["metadata"]["record"]["model"] for s in read_samples(out)} == {"apiflow-oracle"}


def test_bad_input_is_one_line_and_exit_2(own_trials, tmp_path, capsys):
    several = tmp_path / "all.eval"
    assert main(["transcripts", "export", "--format", "inspect", str(own_trials), str(several)]) == 2
    assert not several.exists()  # nothing half-written is left behind
    assert (
        main(["transcripts", "export", "--format", "inspect", str(tmp_path / "nope"), str(tmp_path / "o")])
        == 2
    )
    assert main(["transcripts", "export", "--format", "inspect", str(own_trials), str(tmp_path / "o"),
                 "--model", "no-such-model"]) == 2  # fmt: skip
    assert main(["transcripts", "export", "--format", "csv", str(own_trials), str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("apiflow: error:")]
    assert len(errors) == 4 and "Traceback" not in err
    assert "one model on one bank" in errors[0]


def test_ingest_refuses_a_log_it_did_not_write(tmp_path, capsys):
    foreign = tmp_path / "foreign.eval"
    with zipfile.ZipFile(foreign, "w") as archive:
        archive.writestr("header.json", json.dumps({"version": 2, "eval": {"task": "x", "metadata": {}}}))
    assert main(["transcripts", "ingest", str(foreign), "--out", str(tmp_path / "x.parquet")]) == 2
    assert "not written by `apiflow transcripts export`" in capsys.readouterr().err
    (tmp_path / "broken.eval").write_bytes(b"PK\x03\x04 not a zip")
    assert (
        main(["transcripts", "ingest", str(tmp_path / "broken.eval"), "--out", str(tmp_path / "y.parquet")])
        == 2
    )
    assert "not a readable Inspect .eval log" in capsys.readouterr().err


@pytest.mark.parametrize("workers", [1, 2])
def test_ingest_of_a_log_in_chunks_keeps_every_row(own_logs, tmp_path, workers):
    from apiflow.analysis.ingest import ingest

    stats = ingest([own_logs], tmp_path / "rows.parquet", workers=workers, chunk_files=3)
    assert stats.rows == stats.files == sum(1 for log in own_logs.glob("*.eval") for _ in read_samples(log))
    assert stats.bytes == sum(p.stat().st_size for p in own_logs.glob("*.eval"))


@pytest.mark.parametrize(
    "task_id", ["../../escape-w01-sub01", "a/b-w01-sub01", "a\\b-w01-sub01", "v1-w01-sub01\x00"]
)
def test_a_task_id_that_is_no_safe_name_never_becomes_a_member_name(tmp_path, capsys, task_id):
    """The sample member is named from the record's task id (``samples/<id>_epoch_<n>.json``): an id
    holding a path separator, ``..`` or a control character would name a path outside ``samples/``
    for whoever unzips the log, so the export refuses it."""
    record = json.loads(next(PUBLISHED.glob("*/*.json")).read_bytes())
    record["task_id"] = task_id
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "trial.json").write_text(json.dumps(record))
    out = tmp_path / "out"
    assert main(["transcripts", "export", "--format", "inspect", str(tmp_path / "in"), str(out)]) == 2
    err = capsys.readouterr().err
    assert repr(task_id) in err and len(err.strip().splitlines()) == 1
    assert list(out.glob("*.eval")) == []  # nothing half-written left behind
