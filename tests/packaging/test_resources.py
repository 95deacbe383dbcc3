"""``apiflow.resources``: shipped banks and configs by name or by path, from a clone or from a wheel's data."""

from __future__ import annotations

from pathlib import Path

import pytest

import apiflow.resources as resources
from apiflow.bank import load_bank
from apiflow.cli import main
from apiflow.errors import UsageError
from apiflow.resources import known, resolve
from apiflow.results.prices import load_price_table

ROOT = Path(__file__).resolve().parents[2]


def test_a_clone_runs_on_its_own_folders():
    assert resources.data_root() == ROOT
    assert known("bank") == ["sample", "v1"]
    assert "2027-01" in known("prices") and "demo" in known("grid") and "default" in known("ratelimits")


def test_a_name_a_repository_path_and_a_path_all_resolve(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no bank/ or configs/ here: only the shipped files answer
    assert resolve("bank", "v1") == ROOT / "bank" / "v1"
    assert resolve("bank", "bank/sample") == ROOT / "bank" / "sample"
    assert resolve("prices", "2026-12") == resolve("prices", "2026-12.yaml") == ROOT / "configs/prices/2026-12.yaml"
    assert resolve("grid", "configs/grids/demo.yaml") == ROOT / "configs/grids/demo.yaml"
    (tmp_path / "v1").mkdir()
    assert resolve("bank", "v1") == Path("v1")  # a path that exists wins over a name


@pytest.mark.parametrize("value", ["v9", "bank/v9", "../bank/v1", "/no/such/bank"])
def test_anything_else_is_one_line_naming_the_shipped_ones(tmp_path, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as caught:
        resolve("bank", value)
    assert str(caught.value) == (
        f"cannot read bank {value}: it does not exist (neither a path nor a shipped bank: sample, v1)"
    )


def test_an_installed_apiflow_reads_its_package_data(tmp_path, monkeypatch):
    monkeypatch.setattr(resources, "_CHECKOUT", tmp_path)  # as in site-packages: no bank/ beside apiflow/
    assert resources.data_root() == Path(resources.__file__).parent / "_data"


def test_the_loaders_and_the_cli_take_names(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert load_bank("sample").name == "sample"
    assert load_price_table("2026-12").version == "2026-12"
    assert main(["task", "list", "--bank", "sample"]) == 0
    assert "sample-w01-sub01" in capsys.readouterr().out
    assert main(["task", "list", "--bank", "nope"]) == 2
    assert "shipped bank: sample, v1" in capsys.readouterr().err


def test_a_grid_names_its_bank_prices_and_rate_limits(tmp_path, monkeypatch):
    from cluster.spec import load_grid

    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.yaml").write_text(
        "bank: v1\nprice_table: 2026-12\nratelimits_file: default\nmodels: [{model: apiflow/oracle}]\n"
    )
    spec = load_grid("g.yaml")
    assert spec.bank == str(ROOT / "bank" / "v1")
    assert spec.price_table == str(ROOT / "configs/prices/2026-12.yaml")
    assert spec.ratelimits  # read from configs/ratelimits/default.yaml
    demo = load_grid("demo")  # the shipped grid by name; its repository paths resolve from any folder
    assert demo.bank == str(ROOT / "bank" / "sample")
    assert demo.price_table == str(ROOT / "configs/prices/2027-01.yaml")
