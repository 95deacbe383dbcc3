"""The grid's units need no Ray: a small grid played by the trial runner in this process, then
``apiflow grid status`` on its store in a process where ``import ray`` fails."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import yaml

from apiflow.results.prices import load_price_table
from apiflow.results.store import ResultStore
from cluster.driver import absolute_paths
from cluster.manifest import build_manifest, grid_id
from cluster.plan import plan_grid
from cluster.spec import load_grid
from cluster.worker import TrialRunner, load_checked_bank

ROOT = Path(__file__).resolve().parents[2]

NO_RAY = (
    "import sys; sys.modules['ray'] = None\n"  # any `import ray` now raises ImportError
    "from apiflow.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "assert 'ray' not in {m.split('.')[0] for m in sys.modules if sys.modules[m] is not None}\n"
    "sys.exit(code)\n"
)


def test_grid_status_runs_without_ray(tmp_path: Path) -> None:
    grid = yaml.safe_load((ROOT / "configs/grids/demo.yaml").read_text())
    grid.update(models=[{"model": "apiflow/oracle"}, {"model": "apiflow/blank"}], epochs=1, out=str(tmp_path / "out"))
    grid["tasks"] = {"ids": ["sample-w01-sub01", "sample-w01-sub02"]}
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    spec = absolute_paths(load_grid(tmp_path / "grid.yaml"), ROOT)
    bank = load_checked_bank(spec)
    plan = plan_grid(spec, bank)
    ResultStore(spec.out).write_manifest(build_manifest(spec, bank, load_price_table(spec.price_table), len(plan)))
    outcomes = asyncio.run(TrialRunner(spec, grid_id(spec, bank)[:22]).run_batch(plan[:3]))
    assert len(outcomes) == 3

    out = subprocess.run(
        [sys.executable, "-c", NO_RAY, "grid", "status", spec.out],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "done 3 / 4; remaining 1" in out.stdout
