"""A grid on Ray draws its canaries from its output's secret key, and a grid without a seed draws one
(issue 26): both are kept for the resume, which makes the records the first run would have made."""

from __future__ import annotations

import json

import pytest
from clusterkit import ROOT

from apiflow.bank import DEFAULT_BANK
from apiflow.results.canary_key import KEY_PARTS, stored_key
from apiflow.results.layout import BATCHES
from apiflow.results.store import ResultStore
from cluster.driver import run_grid
from cluster.spec import GridSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def seedless(out: str, **changes) -> GridSpec:
    data = {
        "name": "canary", "bank": str(DEFAULT_BANK), "seed": None, "out": out, "epochs": 2,
        "models": [{"model": "apiflow/oracle"}, {"model": "apiflow/sim:weak"}],
        "tasks": {"ids": ["sample-w01-sub01", "sample-w01-sub02", "sample-w01-chain-1to02"]},
        "price_table": str(ROOT / "configs/prices/2026-12.yaml"), "concurrency": {"actors": 2, "batch": 3},
    }  # fmt: skip
    data.update(changes)
    return GridSpec.model_validate(data)


def transcripts(store: ResultStore) -> dict[str, dict]:
    """Every stored trial's record, wall-time fields blanked."""
    found = {}
    for row in store.read_rows().to_pylist():
        record = store.read_transcript(row["model"], row["trial_id"])
        record["duration_s"], record["provenance"]["created"] = None, None
        found[row["trial_id"]] = record
    return found


@pytest.mark.parametrize("where", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_a_seedless_grid_draws_its_seed_and_key_once_and_its_resume_keeps_both(
    ray_session, tmp_path, where, request
):
    if where == "s3":
        url, options = request.getfixturevalue("s3_out")
        spec = seedless(url, storage_options=options)
    else:
        spec = seedless(str(tmp_path / "out"))
    assert run_grid(spec, progress=False).complete
    store = ResultStore(spec.out, spec.storage_options)
    manifest = store.read_manifest()
    key = stored_key(store.objects)  # beside the results, through the object layer (S3 too)
    assert key is not None and manifest["canary_key_id"] == key.id
    seed = manifest["grid"]["seed"]
    assert manifest["seed_drawn"] is True and isinstance(seed, int)
    first = transcripts(store)
    assert len(first) == 12
    assert {r["apiflow"]["canary_key_id"] for r in first.values()} == {key.id}
    assert {r["apiflow"]["seed"] for r in first.values()} == {seed}
    assert all(key.secret.hex() not in json.dumps(r) for r in first.values())
    if where == "s3":
        return
    # An interrupted run: two of its batches never committed. The resume plans with the drawn seed,
    # plays with the stored key, and makes exactly the records the first run had made.
    gone = sorted(store.objects.list(f"rows/{BATCHES}", ".parquet"))[:2]
    for path in gone:
        store.objects.fs.rm_file(path)
    left = store.done_ids()
    assert len(left) < 12
    resumed = run_grid(seedless(spec.out), progress=False)
    assert resumed.complete and resumed.already_done == len(left)
    assert store.read_manifest() == manifest and stored_key(store.objects) == key
    assert transcripts(store) == first
    # Another new grid of the same file draws another seed and makes another key.
    other = seedless(str(tmp_path / "other"))
    assert run_grid(other, progress=False).complete
    again = ResultStore(other.out)
    assert again.read_manifest()["grid"]["seed"] != seed
    assert stored_key(again.objects) != key and (tmp_path / "other" / KEY_PARTS[0]).is_dir()


def test_a_grid_stated_without_keys_keeps_the_public_forms(ray_session, tmp_path):
    spec = seedless(str(tmp_path / "out"), seed=0, canary_key="none")
    assert run_grid(spec, progress=False).complete
    store = ResultStore(spec.out)
    assert store.read_manifest()["canary_key_id"] is None and store.read_manifest()["seed_drawn"] is False
    assert stored_key(store.objects) is None
    assert all("canary_key_id" not in r["apiflow"] for r in transcripts(store).values())
    # Its resume in folder mode is refused with one line: a grid keeps the mode it started with.
    from apiflow.errors import UsageError

    store.objects.fs.rm_file(sorted(store.objects.list(f"rows/{BATCHES}", ".parquet"))[0])
    with pytest.raises(UsageError, match="canary_key: none"):
        run_grid(seedless(spec.out, seed=0), progress=False)
