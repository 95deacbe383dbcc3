"""`apiflow panel fit|check`: the cut-down fit regenerates its pinned fixture byte for byte, the check's
cells pass on the published rows themselves and fail on a shifted copy, bad input is a one-line exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from apiflow.analysis.panels import ORIGINAL_19
from apiflow.analysis.trials import select_rows, trials_from_table
from apiflow.cli import main
from apiflow.models.calibrated import load_profiles
from apiflow.panel import check
from apiflow.panel.stats import composition

PUBLISHED = Path("configs/panels/published-trials.parquet")
FIXTURE = Path(__file__).parent / "data" / "fit-cut-down.json"
CUT_DOWN = ["--models", "gpt-5.5,gpt-5.4-mini", "--iterations", "60"]
PAIR = ["gpt-5.4-mini", "gpt-5.5"]


def test_cut_down_fit_regenerates_its_fixture_byte_for_byte(tmp_path):
    out = tmp_path / "fit.json"
    assert main(["panel", "fit", str(PUBLISHED), "--out", str(out), *CUT_DOWN]) == 0
    assert out.read_bytes() == FIXTURE.read_bytes()
    document = json.loads(out.read_text())
    assert document["cut_down"] == {"models": PAIR, "iterations": 60}
    assert sorted(document["models"]) == PAIR


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["panel", "fit", "no-such.parquet", "--out", "x.json"], "does not exist"),
        (["panel", "fit", str(PUBLISHED), "--out", "x.json", "--models", "gpt-5.5,nope"], "nope"),
        (["panel", "fit", str(PUBLISHED), "--out", "x.json", "--models", "gpt-5.5"], "at least two"),
        (["panel", "check", "--bank", "no-such-bank"], "does not exist"),
        (["panel", "check", "--bank", "bank/sample"], "at least 3"),
        (["panel", "check", "--bank", "bank/sample", "--models", "nope"], "not in the calibrated panel"),
        (["panel", "check", "--bank", "bank/sample", "--epochs", "0"], "at least 1"),
        (["panel", "check", "--bank", "bank/sample", "--published", "no-such.parquet"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path):
    argv = [str(tmp_path / a) if a == "x.json" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


@pytest.fixture(scope="module")
def published_pair() -> pa.Table:
    table = select_rows(pq.read_table(PUBLISHED), panel=ORIGINAL_19, models=PAIR)
    return table.select(["model", "task_id", "epoch", "verdict", "g1_passed", "g2_passed", "abstained"])


def _cells(published: pa.Table, simulated: pa.Table) -> list[check.Cell]:
    pub, sim = trials_from_table(published), trials_from_table(simulated)
    params = {slug: load_profiles()[slug].params for slug in PAIR}
    return check.check(pub, sim, params, composition(pub), composition(sim))


def test_check_passes_the_published_rows_against_themselves(published_pair):
    cells = _cells(published_pair, published_pair)
    assert len(cells) == len(PAIR) * len(check.STATISTICS)
    assert all(c.inside for c in cells)
    assert check.summary(cells)["outside"] == []
    solo = next(c for c in cells if c.model == "gpt-5.5" and c.statistic == "solo")
    assert solo.published == solo.simulated == pytest.approx(0.949, abs=0.001)
    assert 0 < solo.se_published < 0.05 and solo.tolerance > solo.closed_published - solo.published


def test_check_fails_a_copy_whose_solo_passes_are_cut(published_pair):
    # Every third solo pass of gpt-5.5 becomes a state failure: its solo rate falls by about 0.3.
    solo = pc.invert(pc.match_substring(published_pair["task_id"], "-chain-")).to_numpy(zero_copy_only=False)
    mine = (published_pair["model"].to_numpy(zero_copy_only=False) == "gpt-5.5") & solo
    passed = published_pair["verdict"].to_numpy(zero_copy_only=False) == "C"
    cut = np.flatnonzero(mine & passed)[::3]
    verdict = published_pair["verdict"].to_numpy(zero_copy_only=False).copy()
    g1 = published_pair["g1_passed"].to_numpy(zero_copy_only=False).copy()
    verdict[cut], g1[cut] = "I", False
    shifted = published_pair.set_column(3, "verdict", pa.array(verdict)).set_column(
        4, "g1_passed", pa.array(g1)
    )
    outside = check.summary(_cells(published_pair, shifted))["outside"]
    assert "gpt-5.5:solo" in outside and not any(o.startswith("gpt-5.4-mini") for o in outside)


def test_table_marks_outside_cells_and_missing_statistics():
    cell = check.Cell("m", "solo", 0.9, 0.9, 0.9, 0.5, 0.01, 0.01, 0.05, 0.05)
    missing = check.Cell("m", "long", 0.7, 0.7, float("nan"), float("nan"), 0.1, float("nan"), 0.3, 0.3)
    assert not cell.inside and missing.inside and not missing.gated
    rest = [check.Cell("m", k, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0) for k, _ in check.STATISTICS[2:]]
    text = check.table([cell, missing, *rest], 5)
    assert "0.900 / 0.500 ±0.050 OUT" in text and "| n/a |" in text and "best-of-5" in text
