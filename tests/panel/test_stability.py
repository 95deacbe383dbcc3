"""Ranking stability (issue 10 §3): τ-b, fractional ranks, the rank bootstrap, and the CLI end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from apiflow.cli import main
from apiflow.panel.stability import (
    SplitCounts,
    bootstrap_ranks,
    fractional_ranks,
    kendall_tau_b,
    stability,
    tau_b_rows,
)


def test_tau_b_known_values_with_ties():
    assert kendall_tau_b([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]) == 1.0
    assert kendall_tau_b([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]) == -1.0
    # one tie on each side: 4 concordant of 6 pairs, 5 untied pairs per side -> 4 / 5
    assert kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 3]) == pytest.approx(0.8)
    # scipy.stats.kendalltau's documented example (ties in both x and y)
    assert kendall_tau_b([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) == pytest.approx(-0.47140452079103173)
    assert np.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))  # undefined when one side is all ties
    batch = tau_b_rows(np.array([[1, 2, 3], [3, 2, 1]]), np.array([1, 2, 3]))
    assert batch.tolist() == [1.0, -1.0]


def test_fractional_ranks_best_first_ties_share():
    assert fractional_ranks(np.array([0.5, 0.9, 0.5, 0.1])).tolist() == [2.5, 1.0, 2.5, 4.0]
    assert fractional_ranks(np.array([0.2, np.nan])).tolist() == [1.0, 2.0]
    assert fractional_ranks(np.array([[0.1, 0.2], [0.3, 0.3]])).tolist() == [[2.0, 1.0], [1.5, 1.5]]


def _split(name, passes, n=10):
    passes = np.array(passes, dtype=float)
    return SplitCounts(name, ["a", "b"], passes, np.full(passes.shape, float(n)))


def test_bootstrap_ranks_on_a_tiny_table():
    # A wins world 0 by far, B wins world 1; pooled A 9/20 > B 7/20. With two worlds a resample
    # draws (2,0), (1,1) or (0,2) with p = 1/4, 1/2, 1/4: only (0,2) puts B first.
    split = _split("s", [[9, 1], [0, 6]])
    boot = bootstrap_ranks(split, 4000, seed=3)
    assert boot.point.tolist() == [1.0, 2.0]
    assert boot.flip(0, 1) == pytest.approx(0.25, abs=0.03)
    assert boot.band().tolist() == [[1.0, 1.0], [2.0, 2.0]]
    again = bootstrap_ranks(split, 4000, seed=3)
    assert np.array_equal(boot.samples, again.samples)  # seeded: deterministic
    dominant = bootstrap_ranks(_split("d", [[9, 1], [8, 2], [7, 3]]), 500, seed=0)
    assert dominant.flip(0, 1) == 0.0 and dominant.sd().tolist() == [0.0, 0.0]


def test_stability_of_identical_and_reversed_splits():
    base = [[9, 1], [8, 2], [7, 3]]
    splits = [_split(f"s{i}", base) for i in range(3)]
    record = stability(splits, {"ref": {"a": 0.1, "b": 0.9}}, bootstrap=200, seed=0)
    assert record["tau"]["mean"] == 1.0 and record["summary"]["mean_rank_sd_across_splits"] == 0.0
    assert record["summary"]["coverage"] == 1.0
    assert record["references"]["ref"]["tau_b_vs_consensus"] == -1.0
    assert record["adjacent_pairs"][0]["flip_across_splits"] == 0.0
    flipped = stability([_split("s1", base), _split("s2", [[1, 9], [2, 8], [3, 7]])], bootstrap=200, seed=0)
    assert flipped["tau"]["mean"] == -1.0
    pair = flipped["adjacent_pairs"][0]
    assert pair["flip_across_splits"] == 1.0 and pair["flip_bootstrap"] == 0.0
    assert flipped["summary"]["coverage"] == 0.0
    with pytest.raises(ValueError):
        stability(splits[:1])


def test_cli_two_tiny_splits_resumes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    argv = ["panel", "stability", "--seeds", "1,2", "--worlds", "2", "--epochs", "1",
            "--models", "gpt-5.5,gpt-oss-20b,kimi-k2p5", "--bootstrap", "50", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    record = json.loads((tmp_path / "stability.json").read_text())
    assert [s["name"] for s in record["splits"]] == ["s1", "s2"]
    assert record["models"] == ["gpt-5.5", "gpt-oss-20b", "kimi-k2p5"]
    assert record["references"]["published"]["models"] == 3
    assert (tmp_path / "rank_spread.png").stat().st_size > 1000
    assert "Kendall's τ-b" in (tmp_path / "stability.md").read_text()
    capsys.readouterr()
    assert main(argv) == 0  # resumed: nothing is played again, the record is the same
    assert "0 to play" in capsys.readouterr().err
    assert json.loads((tmp_path / "stability.json").read_text()) == record


def test_cli_bad_input_is_a_usage_error(tmp_path, capsys):
    assert main(["panel", "stability", "--seeds", "1", "--out", str(tmp_path)]) == 2
    assert main(["panel", "stability", "--models", "gpt-5.5,nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "at least two distinct seeds" in err and "unknown: nope" in err


def test_a_stability_trial_file_holds_play_models_rows_of_its_epoch(tmp_path):
    import pyarrow.parquet as pq

    from apiflow.cli.panel_stability import play_unit
    from apiflow.panel.play import play_model

    model = "apiflow/sim:calibrated-gpt-5.5"
    path = tmp_path / "e2.parquet"
    n = play_unit("bank/sample", model, 2, 0, str(path))
    stored = pq.read_table(path).to_pylist()
    assert n == len(stored) and stored == [
        r for r in play_model("bank/sample", model, 2, 0) if r["epoch"] == 2
    ]
    assert not list(tmp_path.glob("*.tmp*"))  # the temp file was moved into place


def test_resample_pair_disagreement_is_two_pi_one_minus_pi():
    boot = bootstrap_ranks(_split("s", [[9, 1], [0, 6]]), 4000, seed=3)
    above = 1 - boot.flip(0, 1)  # the split puts a above b; pi = share of resamples agreeing
    assert boot.disagree(0, 1) == pytest.approx(2 * above * (1 - above))
    assert boot.disagree(0, 1) == pytest.approx(0.375, abs=0.04)  # 2 * 3/4 * 1/4
