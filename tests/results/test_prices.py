import json
from pathlib import Path

import pytest

from apiflow.errors import UsageError
from apiflow.models.base import Usage
from apiflow.results.prices import DEFAULT_PRICE_TABLE, Prices, cost_usd, load_price_table

FIXTURES = Path(__file__).resolve().parents[1] / "data"  # copies of ../shared/fixtures
PUBLISHED = Path(__file__).resolve().parents[2] / "configs" / "panels" / "published-trials.parquet"
LEADERBOARD_GRID = Path(__file__).resolve().parents[2] / "configs" / "grids" / "leaderboard.yaml"


def test_default_table_prices_every_published_slug_and_route():
    table = load_price_table(DEFAULT_PRICE_TABLE)
    manifest = json.loads((FIXTURES / "transcripts" / "_export_manifest.json").read_text())
    assert len(manifest["per_model"]) == 24
    for slug in manifest["per_model"]:
        assert table.has(slug), slug
        assert table.price(slug).input > 0
    import pyarrow.parquet as pq

    routes = set(
        pq.read_table(PUBLISHED, columns=["model_api"])["model_api"].to_pylist()
    )
    for route in routes:  # the published provider routes are aliases of their slug
        assert table.has(route), route


def test_offline_models_are_free_and_unknown_models_are_an_error():
    table = load_price_table()
    assert table.price("apiflow/sim:careful") == Prices(
        input=0, output=0, cache_read=0, cache_write=0, reasoning=0
    )
    assert table.price("apiflow/oracle").output == 0.0
    with pytest.raises(UsageError, match="no price"):
        table.price("someone/unknown-model")


def test_litellm_ids_alias_their_slug():
    table = load_price_table()
    assert table.price("fireworks_ai/accounts/fireworks/models/glm-5p2") == table.price("glm-5p2")
    assert table.price("anthropic/claude-opus-4-8") == table.price("claude-opus-4-8")


def test_hash_is_of_the_file_bytes(tmp_path):
    table = load_price_table()
    import hashlib

    assert table.hash == hashlib.sha256(Path(table.path).read_bytes()).hexdigest()
    assert table.version == "2026-12"


def test_cost_counts_every_kind_separately():
    prices = Prices(input=1.0, output=2.0, cache_read=0.5, cache_write=4.0, reasoning=8.0)
    usage = Usage(
        input=1_000_000, output=500_000, cache_read=2_000_000, cache_write=250_000, reasoning=125_000
    )
    assert cost_usd(usage, prices) == pytest.approx(1.0 + 1.0 + 1.0 + 1.0 + 1.0)
    assert cost_usd(Usage(), prices) == 0.0


def test_bad_table_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: x\nmodels:\n  m: {input: -1, output: 0, cache_read: 0, cache_write: 0, reasoning: 0}\n"
    )
    with pytest.raises(UsageError, match="invalid price table"):
        load_price_table(bad)
    with pytest.raises(UsageError, match="cannot read"):
        load_price_table(tmp_path / "missing.yaml")
