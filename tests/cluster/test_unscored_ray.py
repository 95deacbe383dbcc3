"""Issue 26 end to end on a real (in-process) Ray: a provider that is down makes its trials unscored,
final at the grid's bound; the run ends complete (nothing missing), a rerun plans nothing, and
``retry_unscored`` runs them again once the provider is back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from clusterkit import ROOT

from apiflow.bank import DEFAULT_BANK
from apiflow.results.store import ResultStore
from cluster.driver import run_grid
from cluster.spec import GridSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _prices(tmp_path: Path) -> Path:
    table = yaml.safe_load((ROOT / "configs/prices/2026-12.yaml").read_text())
    table["models"]["openai/apiflow/*"] = dict(table["models"]["apiflow/*"])
    path = tmp_path / "prices.yaml"
    path.write_text(json.dumps(table))
    return path


def test_a_provider_that_stays_down_leaves_final_trials_not_a_grid_that_never_ends(ray_session, tmp_path):
    from apiflow.testing.standin_server import StandinConfig, StandinServer

    def spec_for(api_base: str) -> GridSpec:
        return GridSpec.model_validate({
            "name": "t", "bank": str(DEFAULT_BANK), "out": str(tmp_path / "out"), "epochs": 1,
            "models": [{"model": "openai/apiflow/oracle", "slug": "down", "params": {"api_base": api_base, "api_key": "k"}},
                       {"model": "apiflow/oracle"}],
            "tasks": {"ids": ["sample-w01-sub01", "sample-w01-sub02"]},
            "max_unscored_attempts": 1,
            "retry": {"max_attempts": 2, "base_s": 0.05, "max_wait_s": 0.1, "max_elapsed_s": 30},
            "concurrency": {"actors": 1, "trials_per_actor": 4},
            "price_table": str(_prices(tmp_path)),
        })  # fmt: skip

    with StandinServer(StandinConfig(p_500=1.0)) as down:
        first = run_grid(spec_for(down), progress=False)
    assert (first.tally.stored, first.tally.harness, first.tally.final) == (2, 2, 2)
    assert first.complete and first.verdict is not None and (first.verdict.missing, first.verdict.final) == (0, 2)
    lines = first.lines()
    assert lines[0].startswith("grid t: 2/4 trials stored (0 before this run, 2 now), 2 unscored, final in ")
    assert any(line.startswith("  UNSCORED, FINAL: 2 trials reached 1 unscored attempts") for line in lines)
    assert not any(line.startswith("SHORTFALL") for line in lines)

    with StandinServer(StandinConfig()) as healed:
        again = run_grid(spec_for(healed), progress=False)  # nothing to run: no Ray call at all
        assert (again.already_done, again.already_final, again.tally.done) == (2, 2, 0) and again.complete
        forced = run_grid(spec_for(healed), progress=False, retry_unscored=True)
    assert forced.already_final == 0 and forced.tally.stored == 2 and forced.complete
    assert len(ResultStore(str(tmp_path / "out")).done_ids()) == 4
