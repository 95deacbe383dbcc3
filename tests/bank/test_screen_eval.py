"""Planted underspecified chains, the grounded view, and ``apiflow bank screen-eval``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from apiflow.analysis.screen import cells_at_most, screen_cells
from apiflow.analysis.screen_section import over_seeds, t975, wilson
from apiflow.analysis.trials import trials_from_table
from apiflow.bank import load_bank
from apiflow.authoring.generate import V1_SEED, build_bank
from apiflow.authoring.generate.plant import read_side_file
from apiflow.authoring.grounded import GroundedView
from apiflow.authoring.screen_eval import cell_passes, play_model, pooled, score_split
from apiflow.cli import main

V1 = Path("bank/v1")
TRANSCRIPTS = Path(__file__).resolve().parents[1] / "data" / "transcripts"


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """World 1 of the v1 seed with two planted chains, where screen-eval would put it."""
    out = tmp_path_factory.mktemp("screen") / "banks" / f"s{V1_SEED}p"
    build_bank(V1_SEED, out, worlds=1, plant=2)
    return out


def test_planting_drops_a_mid_chain_detail_and_changes_nothing_else(planted: Path) -> None:
    cells = read_side_file(planted)["cells"]
    assert len(cells) == 2 and read_side_file(planted)["bank_hash"] == load_bank(planted).hash
    report = json.loads((planted / "validation.json").read_text())
    assert not [r for r in report["results"] if not r["ok"]]
    assert report["gates"]["plant_graded"] == {"passed": 2, "failed": 0}
    ids = {c["task_id"] for c in cells}
    for path in sorted(planted.rglob("*.yaml")):
        rel = path.relative_to(planted)
        mine = path.read_text().replace(f"s{V1_SEED}p-", "v1-")
        theirs = (V1 / rel.parent / rel.name.replace(f"s{V1_SEED}p-", "v1-")).read_text()
        if path.stem not in ids:
            assert mine == theirs, rel
            continue
        cell = next(c for c in cells if c["task_id"] == path.stem)
        doc, old = yaml.safe_load(mine), yaml.safe_load(theirs)
        assert 2 <= cell["segment"] < cell["length"] == doc["length"]
        assert cell["dropped"] in old["prompt"] and cell["dropped"] not in doc["prompt"]
        assert {k: v for k, v in doc.items() if k != "prompt"} == {
            k: v for k, v in old.items() if k != "prompt"
        }


def test_the_grounded_view_finds_open_choices_in_planted_chains_only(planted: Path) -> None:
    bank, ids = load_bank(planted), {c["task_id"] for c in read_side_file(planted)["cells"]}
    chains = [t for t in bank.tasks.values() if t.kind == "chain"]
    opened = {t.id for t in chains if GroundedView(t, bank.world_of(t)).open}
    assert opened == ids
    v1 = load_bank(V1)
    assert not [
        t.id
        for t in v1.tasks.values()
        if t.kind == "chain" and "-w01-" in t.id and GroundedView(t, v1.world_of(t)).open
    ]


def test_a_guess_sometimes_picks_the_look_alike(planted: Path) -> None:
    bank = load_bank(planted)
    task = bank.tasks[read_side_file(planted)["cells"][0]["task_id"]]
    view = GroundedView(task, bank.world_of(task))
    (selection,) = view.open
    played = [view.play(random.Random(i)) for i in range(40)]
    right = sum(p.golden == task.golden for p in played)
    assert 0 < right < 40  # uniform over the listed look-alikes
    wrong = next(p for p in played if p.golden != task.golden)
    after = json.dumps([s.model_dump() for s in wrong.golden[selection.step + 1 :]])
    assert (
        selection.chosen not in after
        and wrong.golden[: selection.step + 1] == task.golden[: selection.step + 1]
    )


def test_the_oracle_through_the_view_passes_good_chains_always_and_planted_ones_only_by_luck(
    planted: Path,
) -> None:
    rows = play_model(str(planted), "apiflow/oracle", 8, 0)
    ids = {c["task_id"] for c in read_side_file(planted)["cells"]}
    by_task: dict[str, list[str]] = {}
    for row in rows:
        by_task.setdefault(row["task_id"], []).append(row["verdict"])
    assert all(v == ["C"] * 8 for t, v in by_task.items() if t not in ids)
    assert all(v.count("C") < 8 for t, v in by_task.items() if t in ids)


def _rows(passes: dict[str, int], trials: int = 4) -> list[dict[str, object]]:
    return [
        {"model": "m", "task_id": task, "verdict": "C" if i < n else "I", "harness": False}
        for task, n in passes.items()
        for i in range(trials)
    ]


def test_scores_count_flagged_planted_and_hits_per_threshold() -> None:
    passes = {"x-w01-chain-1to02": 0, "x-w01-chain-1to03": 1, "x-w01-chain-1to04": 3, "x-w01-chain-1to05": 4}
    passes |= {"x-w01-sub01": 0}  # a solo task is never a cell
    rows = _rows(passes)
    trials = trials_from_table(pa.Table.from_pylist(rows))
    assert cells_at_most(trials, 0) == screen_cells(trials).flagged == ["x-w01-chain-1to02"]
    scores = score_split(rows, {"x-w01-chain-1to03", "x-w01-chain-1to05"}, seed=7)
    got = [(s.threshold, s.flagged, s.hits, s.precision, s.recall) for s in scores]
    assert got == [(0, 1, 0, 0.0, 0.0), (1, 2, 1, 0.5, 0.5), (3, 3, 1, 1 / 3, 0.5)]
    assert [s.cells for s in scores] == [4, 4, 4]
    twice = pooled(scores + scores)
    assert [(s.seed, s.flagged, s.planted, s.hits) for s in twice] == [
        (None, 2, 4, 0),
        (None, 4, 4, 2),
        (None, 6, 4, 2),
    ]


def test_a_harness_fault_is_neither_a_pass_nor_a_model_failure() -> None:
    rows = _rows({"x-w01-chain-1to02": 0, "x-w01-chain-1to03": 1})
    faults = [
        {"model": "m", "task_id": "x-w01-chain-1to04", "verdict": "", "harness": True},  # only faults
        {"model": "m", "task_id": "x-w01-chain-1to03", "verdict": "C", "harness": True},
    ]
    assert cell_passes(rows + faults) == {"x-w01-chain-1to02": 0, "x-w01-chain-1to03": 1}
    scores = score_split(rows + faults, {"x-w01-chain-1to04"}, seed=1)
    assert [(s.threshold, s.flagged, s.hits) for s in scores] == [(0, 1, 0), (1, 2, 0), (3, 2, 0)]


def test_intervals_over_seeds_and_pooled() -> None:
    assert t975(2) == 4.303 and abs(t975(30) - 2.042) < 1e-3 and abs(t975(1000) - 1.962) < 1e-3
    low, high = wilson(2, 2) or [0, 0]
    assert round(low, 3) == 0.342 and high == 1.0 and wilson(0, 0) is None
    scores = [
        {"seed": seed, "threshold": 0, "precision": p, "recall": r}
        for seed, p, r in ((1, 0.5, 0.2), (2, None, 0.0), (3, 1.0, 0.4))
    ]
    precision, recall = over_seeds(scores)
    assert precision["splits"] == 2 and precision["mean"] == 0.75 and precision["min"] == 0.5
    assert precision["ci95"] == [0.0, 1.0]  # 12.706 * 0.354 / 1.414 is wider than [0, 1]
    assert recall["splits"] == 3 and abs(recall["mean"] - 0.2) < 1e-12
    assert recall["ci95"] == pytest.approx([0.0, 0.2 + 4.303 * 0.2 / 3**0.5])


def test_cli_screen_eval_writes_table_section_and_plot(
    planted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = planted.parent.parent
    code = main(
        [
            "bank",
            "screen-eval",
            "--seeds",
            str(V1_SEED),
            "--worlds",
            "1",
            "--per-world",
            "2",
            "--epochs",
            "1",
            "--panel",
            "apiflow/sim:ace,apiflow/sim:weak",
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr()
    record = json.loads((out / "screen_eval.json").read_text())
    assert record["trials"] == 2 * 19 and len(record["scores"]) == 6
    rows = [json.loads(line) for line in (out / f"trials-s{V1_SEED}p.jsonl").read_text().splitlines()]
    ids = {c["task_id"] for c in read_side_file(planted)["cells"]}
    assert [s.as_dict() for s in score_split(rows, ids, V1_SEED)] == record["scores"][:3]
    assert record["harness_trials"] == 0 and record["panel_fit_sha256"] is None
    assert "| pooled | <=3 |" in (out / "screen_eval.md").read_text()
    assert (out / "screen_pr.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the report carries the section: apiflow report ... --screen-eval FILE
    rep = out / "report"
    args = ["report", str(TRANSCRIPTS), "--out", str(rep), "--bootstrap", "20"]
    assert main([*args, "--screen-eval", str(out / "screen_eval.json")]) == 0
    leaderboard = (rep / "leaderboard.md").read_text()
    assert "## Screen precision and recall" in leaderboard and "| pooled | <=3 |" in leaderboard
    assert "(screen_pr.png)" in leaderboard and (rep / "screen_pr.png").stat().st_size > 0
    assert (rep / "report.html").read_text().count("data:image/png;base64,") == 5
    summary = json.loads((rep / "summary.json").read_text())
    assert summary["screen_eval"]["scores"] == record["scores"]
    (out / "broken.json").write_text("{}")
    assert main([*args, "--screen-eval", str(out / "broken.json")]) == 2
    assert main([*args, "--screen-eval", str(out / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "not a screen_eval.json" in err and "cannot read" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "1,x"], "--seeds takes comma-separated integers"),
        (["--seeds", "2,2"], "each once"),
        (["--seeds", "1,-2"], "--seeds must be >= 0"),
        (["--panel", "calibratd"], "unknown panel 'calibratd'"),
        (["--epochs", "0"], "--epochs must be between 1 and 20"),
        (["--panel", "openai/gpt-5-mini"], "offline models only"),
        (["--panel", "apiflow/sim:nobody"], "unknown sim profile"),
        (["--per-world", "0"], "--per-world must be between 1 and 10"),
    ],
)
def test_cli_refuses_bad_input_in_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bank", "screen-eval", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_negative_seed_and_a_file_as_out_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("")
    assert main(["bank", "build", "--seed", "-3", "--out", str(tmp_path / "b")]) == 2
    assert main(["bank", "screen-eval", "--out", str(tmp_path / "afile")]) == 2
    err = capsys.readouterr().err
    assert "--seed must be >= 0" in err and "is a file, not a folder" in err and "Traceback" not in err
