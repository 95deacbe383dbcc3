"""Canary forms come from a results folder's secret key, which no released record carries (issue 26).

A record shows its seed, task and epoch; with the forms derived from those alone, a released
transcript predicted the forms of any new run with the same seed. Here: two keys give two sets of
forms for one (seed, task, epoch); what is released (transcript JSON, rows, Inspect logs, the viewer's
site, unpacked transcripts) holds the key in no encoding; a rerun into the same folder makes the
records an uninterrupted run makes; a grid file without a seed draws one that its resume keeps; a
regrade given another key stops with one line, exit 2. docs/design/011-grader-exploit-audit.md.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from secretscan import files_under, scan

from apiflow.agent import TrialSpec, trial_seed
from apiflow.agent.ids import canary_seed, derived_seed
from apiflow.agent.trial import graded_task
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.cli import main
from apiflow.models import make_model
from apiflow.results.canary_key import KEY_PARTS, CanaryKey, folder_key, read_key
from apiflow.results.objects import ObjectFolder
from apiflow.results.record import WALL_TIME_FIELDS
from apiflow.results.store import ResultStore
from apiflow.runner import play_trial_sync
from apiflow.world.canaries import SALTED, suffix

ROOT = Path(__file__).resolve().parents[2]
TASK = "sample-w01-sub01"
ORACLE = "apiflow/oracle"


@pytest.fixture(scope="module")
def bank() -> Any:
    return load_bank(DEFAULT_BANK)


def _play(
    bank: Any, key: CanaryKey | None, task_id: str = TASK, epoch: int = 1, seed: int = 0
) -> dict[str, Any]:
    task = bank.task(task_id)
    spec = TrialSpec(
        task=task, world=bank.world_of(task), seed=seed, epoch=epoch, bank_name=bank.name, bank_hash=bank.hash,
        run_id="canary-test", model_slug="apiflow-oracle", canary_key=key,
    )  # fmt: skip
    record = play_trial_sync(spec, make_model(ORACLE, task, trial_seed(seed, task.id, epoch)))
    return json.loads(record.to_json())


def _forms(record: dict[str, Any]) -> dict[str, str]:
    """Each salted literal of a record and the suffix its trial gave it (what a reader of it learns)."""
    return {m.group(1): m.group(2) for m in SALTED.finditer(json.dumps(record["messages"]))}


def _without_wall_time(record: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(json.dumps(record))
    for dotted in WALL_TIME_FIELDS:
        *parents, last = dotted.split(".")
        holder = data
        for part in parents:
            holder = holder[part]
        holder[last] = None
    return data


def _run(out: Path, *extra: str, tasks: tuple[str, ...] = (TASK,), epochs: int = 1) -> int:
    argv = ["run", "--model", ORACLE, "--task", *tasks, "--epochs", str(epochs), "--out", str(out), *extra]
    return main(argv)


def _records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted((out / "apiflow-oracle").glob("*.json"))}


def test_two_keys_give_two_sets_of_forms_for_one_trial(bank: Any) -> None:
    one, other = CanaryKey.new(), CanaryKey.new()
    first, second, again = _play(bank, one), _play(bank, other), _play(bank, one)
    forms_one, forms_other = _forms(first), _forms(second)
    assert forms_one and forms_one.keys() == forms_other.keys()
    assert all(forms_one[v] != forms_other[v] for v in forms_one)  # every literal: another form
    assert first["verdict"] == second["verdict"] == "C"
    assert _without_wall_time(first) == _without_wall_time(again)  # one key, one record
    assert first["apiflow"]["canary_key_id"] == one.id != other.id == second["apiflow"]["canary_key_id"]
    # The grading spec is salted in the key's forms too (what a regrade against the bank rebuilds).
    task = bank.task(TASK)
    graded = graded_task(task, bank.world_of(task), seed=0, epoch=1, canary_key=one)
    assert any(
        f"{v}~{s}" in json.dumps([p.model_dump() for p in graded.predicates]) for v, s in forms_one.items()
    )


def test_without_a_key_the_forms_are_those_of_before(bank: Any) -> None:
    """Library calls and ``--canary-key none``: the public derivation (tests, benchmarks, the records digest)."""
    record = _play(bank, None)
    assert "canary_key_id" not in record["apiflow"]
    seed = derived_seed("canary", 0, TASK, 1)
    assert canary_seed(0, TASK, 1) == seed
    assert all(tail == suffix(seed, literal) for literal, tail in _forms(record).items())


def test_a_released_record_predicts_no_form_of_another_run(bank: Any, tmp_path: Path) -> None:
    assert _run(tmp_path / "released") == 0 and _run(tmp_path / "new") == 0
    (released,) = _records(tmp_path / "released").values()
    (new,) = _records(tmp_path / "new").values()
    assert released["apiflow"]["seed"] == new["apiflow"]["seed"] and released["trial"] == new["trial"]
    seen, fresh = _forms(released), _forms(new)
    assert fresh and fresh.keys() == seen.keys()
    # Neither the released forms nor what the code derives from the record's own fields give the new ones.
    public = derived_seed("canary", released["apiflow"]["seed"], released["task_id"], released["trial"])
    for literal, tail in fresh.items():
        assert tail != seen[literal] and tail != suffix(public, literal)
    # A value copied from the released transcript is refused by the new trial's world (another suffix).
    assert released["apiflow"]["canary_key_id"] != new["apiflow"]["canary_key_id"]


def test_the_folder_key_is_private_and_named_only_by_its_id(tmp_path: Path) -> None:
    assert _run(tmp_path / "out") == 0
    path = tmp_path / "out" / Path(*KEY_PARTS)
    key = read_key(str(path))
    assert read_key(str(tmp_path / "out")) == key  # the folder names its key too
    assert path.stat().st_mode & 0o077 == 0 and path.parent.stat().st_mode & 0o077 == 0  # the owner's alone
    assert repr(key) == f"CanaryKey(id={key.id})" and key.secret.hex() not in repr(key)
    (record,) = _records(tmp_path / "out").values()
    assert record["apiflow"]["canary_key_id"] == key.id
    assert folder_key(ObjectFolder(str(tmp_path / "out"))) == key  # found again, never replaced


def _grid_spec(out: Path, **changes: Any) -> Any:
    from cluster.driver import absolute_paths
    from cluster.spec import GridSpec

    data = {
        "name": "canary", "bank": str(DEFAULT_BANK), "models": [{"model": ORACLE}, {"model": "apiflow/sim:weak"}],
        "tasks": {"ids": [TASK, "sample-w01-sub02"]}, "epochs": 2, "out": str(out),
        "price_table": str(ROOT / "configs/prices/2026-12.yaml"), "concurrency": {"batch": 4},
    }  # fmt: skip
    data.update(changes)
    return absolute_paths(GridSpec.model_validate(data), ROOT)


def _play_grid(spec: Any, parts: int = 1) -> list[str]:
    """Play a grid's plan in ``parts`` runners one after another (each a fresh worker, as a resume
    gets), without Ray; returns the planned trial ids."""
    from apiflow.results.prices import load_price_table
    from cluster.manifest import build_manifest, grid_canary_key
    from cluster.plan import plan_grid
    from cluster.worker import TrialRunner, load_checked_bank

    bank = load_checked_bank(spec)
    plan = plan_grid(spec, bank)
    store = ResultStore(spec.out)
    spec, key = grid_canary_key(spec, store, store.read_manifest())  # as the driver does
    prices = load_price_table(spec.price_table)
    store.write_manifest(build_manifest(spec, bank, prices, len(plan), canary_key=key))
    size = -(-len(plan) // parts)
    for start in range(0, len(plan), size):
        asyncio.run(TrialRunner(spec, "canary-grid").run_batch(plan[start : start + size]))
    return [p.trial_id for p in plan]


def test_released_outputs_hold_no_key(tmp_path: Path) -> None:
    spec = _grid_spec(tmp_path / "grid")
    _play_grid(spec)
    key = read_key(spec.out)
    assert _run(tmp_path / "local") == 0
    local_key = read_key(str(tmp_path / "local"))
    released = tmp_path / "released"
    assert main(["transcripts", "export", "--format", "inspect", spec.out, str(released / "grid")]) == 0
    assert (
        main(["transcripts", "export", "--format", "inspect", str(tmp_path / "local"), str(released / "l")])
        == 0
    )
    assert (
        main(["transcripts", "ingest", str(tmp_path / "local"), "--out", str(released / "rows.parquet")]) == 0
    )
    assert main(["view", spec.out, "--out", str(released / "site"), "--workers", "1"]) == 0
    assert (
        main(["view", str(tmp_path / "local"), "--out", str(released / "local-site"), "--workers", "1"]) == 0
    )
    store = ResultStore(spec.out)
    store.compact()
    written, _ = store.unpack_archives()
    assert written > 0
    outputs = files_under(released)
    assert any(p.endswith(".eval") for p in outputs) and any(p.endswith("index.html") for p in outputs)
    # Everything a grid's folder holds but its secret: rows, transcripts, archives, manifest, compacted files.
    stored = {
        p: b for p, b in files_under(Path(spec.out), tmp_path / "local").items() if "/_secret/" not in p
    }
    assert any("/rows/" in p for p in stored) and any("/transcripts/" in p for p in stored)
    needles = {"grid key": key.secret.hex(), "local key": local_key.secret.hex()}
    leaks = scan({**outputs, **stored}, needles)
    assert leaks == [], "\n".join(map(str, leaks[:20]))
    # The records and the manifest name the key by its id.
    assert store.read_manifest()["canary_key_id"] == key.id
    ids = {json.loads(b)["apiflow"].get("canary_key_id") for p, b in stored.items() if p.endswith(".json")
           and "/transcripts/" in p}  # fmt: skip
    assert ids == {key.id}


def test_a_rerun_into_the_same_folder_makes_the_records_of_an_uninterrupted_run(tmp_path: Path) -> None:
    tasks = (TASK, "sample-w01-sub02")
    resumed, whole = tmp_path / "resumed", tmp_path / "whole"
    assert _run(resumed, tasks=tasks[:1]) == 0  # the run stopped after its first trial
    first = _records(resumed)
    assert _run(resumed, tasks=tasks, epochs=2) == 0  # the rerun finds the folder's key
    (whole / KEY_PARTS[0]).mkdir(parents=True)
    shutil.copy(resumed / Path(*KEY_PARTS), whole / Path(*KEY_PARTS))  # the same key, one whole run
    assert _run(whole, tasks=tasks, epochs=2) == 0
    again, reference = _records(resumed), _records(whole)
    assert len(reference) == 4 and again.keys() == reference.keys()
    assert {k: _without_wall_time(v) for k, v in again.items()} == {
        k: _without_wall_time(v) for k, v in reference.items()
    }
    for name, record in first.items():  # the partial run's trial (another run id: it named fewer trials)
        record["provenance"]["run_id"] = reference[name]["provenance"]["run_id"]
        assert _without_wall_time(record) == _without_wall_time(reference[name])
    # A grid's workers do the same: a second runner (a resume's) reads the key the first one made.
    grid_resumed, grid_whole = _grid_spec(tmp_path / "g1"), _grid_spec(tmp_path / "g2")
    planned = _play_grid(grid_resumed, parts=3)
    (tmp_path / "g2" / KEY_PARTS[0]).mkdir(parents=True)
    shutil.copy(tmp_path / "g1" / Path(*KEY_PARTS), tmp_path / "g2" / Path(*KEY_PARTS))
    _play_grid(grid_whole)
    one, other = ResultStore(grid_resumed.out), ResultStore(grid_whole.out)
    models = {r["trial_id"]: r["model"] for r in one.read_rows().to_pylist()}
    assert sorted(models) == sorted(planned)
    for trial_id, model in models.items():
        resumed_record = _without_wall_time(one.read_transcript(model, trial_id))
        assert resumed_record == _without_wall_time(other.read_transcript(model, trial_id))


def test_canary_key_none_is_the_public_derivation(bank: Any, tmp_path: Path) -> None:
    assert _run(tmp_path / "out", "--canary-key", "none") == 0
    assert not (tmp_path / "out" / KEY_PARTS[0]).exists()
    (record,) = _records(tmp_path / "out").values()
    assert _without_wall_time(record)["messages"] == _without_wall_time(_play(bank, None))["messages"]


def test_a_grid_file_without_a_seed_draws_one_its_resume_keeps(tmp_path: Path) -> None:
    from apiflow.results.prices import load_price_table
    from cluster.manifest import build_manifest, grid_canary_key, grid_id, settled_seed
    from cluster.spec import canonical_hash, load_grid
    from cluster.worker import load_checked_bank

    demo = yaml.safe_load((ROOT / "configs/grids/demo.yaml").read_text())
    stated = load_grid(ROOT / "configs/grids/demo.yaml")
    bank = load_checked_bank(stated)
    # A grid that states its seed keeps it, and its id is what it was before the seed could be drawn.
    assert settled_seed(stated, None) == (stated, False)
    old_identity = {**stated.identity(), "seed": 0, "bank_hash": bank.hash}
    assert grid_id(stated, bank) == canonical_hash(old_identity)
    demo.pop("seed")
    demo["out"] = str(tmp_path / "out")
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(demo))
    seedless = load_grid(tmp_path / "grid.yaml")
    assert seedless.seed is None
    first, drawn = settled_seed(seedless, None)
    other, _ = settled_seed(seedless, None)
    assert drawn and isinstance(first.seed, int) and first.seed != other.seed  # not a constant
    store = ResultStore(first.out)
    first, key = grid_canary_key(first, store, None)
    manifest = build_manifest(
        first, bank, load_price_table(first.price_table), 1, seed_drawn=True, canary_key=key
    )
    store.write_manifest(manifest)
    resumed, drawn_again = settled_seed(seedless, store.read_manifest())
    assert drawn_again and resumed.seed == first.seed and grid_id(resumed, bank) == manifest["grid_id"]
    assert key is not None and store.read_manifest()["canary_key_id"] == key.id
    assert grid_canary_key(resumed, store, store.read_manifest())[1] == key  # the resume's key is the first's


def test_regrade_names_the_key_a_record_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path / "a") == 0 and _run(tmp_path / "b") == 0
    capsys.readouterr()
    a_key, b_key = read_key(str(tmp_path / "a")), read_key(str(tmp_path / "b"))
    # By the recorded predicates (which carry the forms): no key needed.
    assert main(["regrade", str(tmp_path / "a"), "--workers", "1"]) == 0
    # Against the bank's spec, with the folder's key: the forms are rebuilt, the verdict agrees.
    assert (
        main(
            ["regrade", str(tmp_path / "a"), "--bank", str(DEFAULT_BANK), "--canary-key", str(tmp_path / "a")]
        )
        == 0
    )
    assert "verdict agree   1/1" in capsys.readouterr().out
    cases = [
        (["--canary-key", str(tmp_path / "b")], [b_key.id, a_key.id]),
        (
            ["--bank", str(DEFAULT_BANK), "--canary-key", str(tmp_path / "b" / Path(*KEY_PARTS))],
            [b_key.id, a_key.id],
        ),
        (["--bank", str(DEFAULT_BANK)], [a_key.id, "--canary-key"]),
        (["--canary-key", str(tmp_path / "nowhere")], ["no canary key"]),
    ]
    (tmp_path / "bad.key").write_text("not hex\n")
    cases.append((["--canary-key", str(tmp_path / "bad.key")], ["not a canary key"]))
    for extra, named in cases:
        assert main(["regrade", str(tmp_path / "a"), *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("apiflow: error:"), err
        assert all(n in err for n in named), (extra, err)
        assert a_key.secret.hex() not in err and b_key.secret.hex() not in err


def test_the_key_file_is_strict(tmp_path: Path) -> None:
    from apiflow.errors import UsageError

    with pytest.raises(UsageError, match="not a canary key"):
        CanaryKey.parse(b"00" * 31, "x")
    assert re.fullmatch(r"[0-9a-f]{12}", CanaryKey.new().id)
