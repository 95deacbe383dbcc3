"""The dry-run estimate: token profiles fitted to the published trials, held against trials they never saw."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from apiflow.analysis.token_profile import TokenProfile, estimate, published_cost, published_rows
from apiflow.cli import main
from apiflow.results.prices import load_price_table

ROOT = Path(__file__).resolve().parents[2]
ORIGINAL_19 = "original-19"


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return published_rows()


def _half(task_id: str) -> int:
    return hashlib.sha256(task_id.encode()).digest()[0] & 1


def test_a_profile_fitted_on_half_the_tasks_estimates_the_other_half(rows: list[dict]) -> None:
    """Each model of the panel within 25 %, the total within 10 % (both halves, both ways)."""
    table = load_price_table()
    halves = [[r for r in rows if _half(r["task_id"]) == h] for h in (0, 1)]
    profiles = [TokenProfile.fit(halves[1]), TokenProfile.fit(halves[0])]
    models = sorted({r["model"] for r in rows if table.has(r["model"])})
    total_est = total_pub = 0.0
    for model in models:
        prices = table.price(model)
        est = pub = 0.0
        for h in (0, 1):
            mine = [r for r in halves[h] if r["model"] == model]
            est += estimate(profiles[h], model, [(r["kind"], r["length"]) for r in mine], prices).usd
            pub += published_cost(mine, prices)
        assert abs(est / pub - 1) <= 0.25, (model, est, pub)
        total_est, total_pub = total_est + est, total_pub + pub
    assert len(models) >= 19
    assert abs(total_est / total_pub - 1) <= 0.10


def test_turning_caching_off_on_a_claude_route_prices_the_cached_prompt_as_input(rows: list[dict]) -> None:
    profile = TokenProfile.fit(r for r in rows if r["model"].startswith("claude-sonnet-4-6"))
    prices = load_price_table().price("claude-sonnet-4-6")
    places = [("chain", 10)] * 20
    cached = estimate(profile, "anthropic/claude-sonnet-4-6", places, prices)
    plain = estimate(profile, "anthropic/claude-sonnet-4-6", places, prices, caching=False)
    assert cached.source == "cell" and plain.usd > 3 * cached.usd
    assert plain.calls == cached.calls  # the same trials, only the bill differs


def test_a_model_the_corpus_lacks_gets_the_panel_and_a_wide_interval(rows: list[dict]) -> None:
    profile = TokenProfile.fit(rows)
    prices = load_price_table().price("gpt-5-mini")
    known = estimate(profile, "gpt-5-mini", [("solo", 3)] * 50, prices)
    unknown = estimate(profile, "openai/gpt-9-preview", [("solo", 3)] * 50, prices)
    assert known.source == "cell" and unknown.source == "panel"
    assert (unknown.high - unknown.low) / unknown.usd > 2 * (known.high - known.low) / known.usd


def _grid(tmp_path: Path, budget: float) -> Path:
    grid = {
        "name": "paid",
        "bank": str(ROOT / "bank" / "v1"),
        "models": [
            {"slug": "claude-opus-4-8", "model": "anthropic/claude-opus-4-8"},
            {"slug": "gpt-5-mini", "model": "openai/gpt-5-mini"},
        ],
        "epochs": 1,
        "budget_usd": budget,
        "out": str(tmp_path / "out"),
        "ratelimits": {"anthropic": {"rpm": 50, "tpm": 40000}, "openai": {"rpm": 500}},
    }
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    return tmp_path / "grid.yaml"


def test_the_dry_run_prints_dollars_with_an_interval_hours_and_the_cap(tmp_path: Path, capsys) -> None:
    assert main(["grid", "run", str(_grid(tmp_path, 5.0)), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "90% interval $" in err and "claude-opus-4-8: 467 trials, ~$" in err
    assert "bound by anthropic" in err  # 50 requests a minute is the tightest limit here
    assert "budget $5.00: estimate EXCEEDS" in err
    assert not (tmp_path / "out").exists()
    assert main(["grid", "run", str(_grid(tmp_path, 100_000.0)), "--dry-run"]) == 0
    assert "estimate fits" in capsys.readouterr().err


def test_a_batch_tier_model_is_priced_at_half_and_waits_a_batch_per_turn(tmp_path: Path, capsys) -> None:
    grid = yaml.safe_load(_grid(tmp_path, 100_000.0).read_text())
    grid["models"] = [grid["models"][1]]
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    assert main(["grid", "run", str(tmp_path / "grid.yaml"), "--dry-run"]) == 0
    standard = capsys.readouterr().err
    grid["models"][0].update(tier="batch", batching={"expected_s": 1200, "wait_s": 60, "poll_s": 60})
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    assert main(["grid", "run", str(tmp_path / "grid.yaml"), "--dry-run"]) == 0
    batched = capsys.readouterr().err

    def usd(text: str) -> float:
        return float(text.split("gpt-5-mini: ")[1].split("~$")[1].split()[0].replace(",", ""))

    assert usd(batched) == pytest.approx(usd(standard) / 2, rel=0.02)
    assert "bound by openai" in standard and "latency over" in batched
