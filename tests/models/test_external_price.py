"""A grid of ``external/*`` agents needs no price-table entry: free by default, and the row says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from apiflow.models.plugins import FREE
from apiflow.models.registry import model_prices, price_source
from apiflow.results.prices import DEFAULT_PRICE_TABLE, load_price_table
from cluster.spec import load_grid
from cluster.worker import price_for

ROOT = Path(__file__).resolve().parents[2]


def grid_file(tmp_path: Path, model: str) -> Path:
    grid = tmp_path / "grid.yaml"
    grid.write_text(json.dumps({
        "name": "ext", "bank": str(ROOT / "bank/sample"), "out": str(tmp_path / "out"),
        "price_table": str(DEFAULT_PRICE_TABLE), "epochs": 1,
        "models": [{"model": model, "params": {"command": ["python", "agent.py"]}}],
        "tasks": {"ids": ["sample-w01-sub01"]},
    }))  # fmt: skip
    return grid


def test_an_external_agent_without_an_entry_is_free_and_says_so(tmp_path: Path) -> None:
    spec = load_grid(grid_file(tmp_path, "external/my-agent"))
    table = load_price_table(spec.price_table)
    assert not table.has("external/my-agent") and not table.has(spec.models[0].slug)
    assert price_for(table, spec.models[0]) == FREE
    assert price_source(table, spec.models[0].slug, "external/my-agent") == (
        f"{table.version}: none for external/my-agent, free by default"
    )


def test_a_table_entry_still_wins() -> None:
    table = load_price_table()
    assert price_source(table, "gpt-5-mini", "openai/gpt-5-mini") == table.version
    assert model_prices(table, "gpt-5-mini", "openai/gpt-5-mini") == table.price("gpt-5-mini") != FREE


def test_grid_dry_run_plans_an_external_agent_with_the_published_table(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "apiflow.cli", "grid", "run", str(grid_file(tmp_path, "external/my-agent")), "--dry-run"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "my-agent: 1 trials, ~$0.00" in out.stderr and "1 of 1 trials would run" in out.stdout
