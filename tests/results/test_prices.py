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
    assert table.version == "2027-02"


PUBLISHED_TABLES = {
    "2026-12.yaml": "76e1ff8bc32020fc28d6d70ef556cdda6155605c761a78fe9c9285e92482c5c5",
    "local-2026-12.yaml": "57c4389d4d79d0bd6ed246bf3a1a8fafc2796630561c3cd85d6c622eebbaec40",
    "2027-01.yaml": "eb227644f100a8f5957b4bfac57633eed801a2e270eb35dbac889f83e2decd4a",
    "2027-02.yaml": "2e1f8a2fd265555e09168d6927e2e48b87f032ca7a113b4a4a6ff66ecc8cb395",
}


def test_a_published_table_is_never_edited_in_place():
    """Run manifests pin a table's sha256: a change is a new version file, and old ones stay verifiable."""
    import hashlib

    folder = Path(__file__).resolve().parents[2] / "configs" / "prices"
    for name, digest in PUBLISHED_TABLES.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
    assert {p.name for p in folder.glob("*.yaml")} == set(PUBLISHED_TABLES)  # a new table is pinned here


def test_gpt_5_6_cache_writes_cost_what_openai_bills():
    old = load_price_table(Path(__file__).resolve().parents[2] / "configs/prices/2026-12.yaml")
    new = load_price_table()
    for model in ("gpt-5.6-terra", "gpt-5.6-luna", "gpt-5.6-sol"):
        assert old.price(model).cache_write == 0.0  # the old table stays as it was
        assert new.price(model).cache_write == pytest.approx(1.25 * new.price(model).input)


def test_a_tier_scales_the_standard_prices_and_an_unknown_one_is_refused():
    from apiflow.errors import UsageError

    table = load_price_table()
    standard, flex = table.price("gpt-5-mini"), table.price("gpt-5-mini", "flex")
    assert flex.input == pytest.approx(standard.input * 0.5) and flex.output == pytest.approx(standard.output * 0.5)
    assert table.price("claude-opus-4-8", "batch").output == pytest.approx(table.price("claude-opus-4-8").output / 2)
    with pytest.raises(UsageError, match="no 'flex' tier for 'claude-opus-4-8' \\(known: standard, batch\\)"):
        table.price("claude-opus-4-8", "flex")


def test_a_grid_models_service_tier_prices_its_trials_and_names_the_tier():
    from cluster.spec import GridModel
    from cluster.worker import _worker_price_source, price_for

    table = load_price_table()
    flex = GridModel(model="openai/gpt-5-mini", params={"service_tier": "flex"})
    default = GridModel(model="openai/gpt-5-mini", params={"service_tier": "default"})
    assert price_for(table, flex) == table.price("gpt-5-mini", "flex")
    assert price_for(table, default) == table.price("gpt-5-mini")
    assert _worker_price_source(table, flex) == "2027-02 flex" and _worker_price_source(table, default) == "2027-02"


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
