"""The forward generator: deterministic, reproduces bank/v1, another seed gives another bank of the same shape."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from apiflow.bank import Bank, load_bank
from apiflow.authoring.gates import verify_bank
from apiflow.authoring.generate import DOMAINS, V1_SEED, build_bank
from apiflow.authoring.generate.plan import AXIS_ORDER, storyline
from apiflow.authoring.generate.values import derive_rng
from apiflow.cli import main

V1 = Path("bank/v1")


@cache
def v1() -> Bank:
    return load_bank(V1)


@pytest.fixture(scope="module")
def first_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "one"
    build_bank(V1_SEED, out, worlds=1)
    return out


def test_same_seed_same_bytes_and_v1_is_reproduced(first_world: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    build_bank(V1_SEED, again, worlds=1)
    files = sorted(p.relative_to(first_world) for p in first_world.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for rel in files:
        assert (first_world / rel).read_bytes() == (again / rel).read_bytes(), rel
    # World 1 grows independently of the others, so its files equal bank/v1's byte for byte.
    for rel in files:
        if rel.parts[0] in ("worlds", "tasks"):
            assert (first_world / rel).read_bytes() == (V1 / rel).read_bytes(), rel


@pytest.mark.slow
def test_full_v1_rebuild_is_byte_identical(tmp_path: Path) -> None:
    out = tmp_path / "v1"
    build_bank(V1_SEED, out)
    assert sorted(p.name for p in out.rglob("*")) == sorted(p.name for p in V1.rglob("*"))
    for path in V1.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (out / path.relative_to(V1)).read_bytes(), path


def test_another_seed_is_a_different_bank_of_the_same_shape(tmp_path: Path) -> None:
    out = tmp_path / "private"
    manifest = build_bank(4242, out, worlds=2)
    private = load_bank(out)
    assert private.name == "s4242" and manifest["hash"] != v1().hash
    shape = Counter((t.world, t.kind) for t in private.tasks.values())
    assert shape == {("w01", "solo"): 20, ("w01", "chain"): 19, ("w02", "solo"): 20, ("w02", "chain"): 19}
    v1_prompts = {t.prompt for t in v1().tasks.values()}
    assert not v1_prompts & {t.prompt for t in private.tasks.values()}
    assert not verify_bank(private).failures()


def test_v1_has_the_published_shape() -> None:
    tasks = list(v1().tasks.values())
    assert len(v1().worlds) == 13
    assert Counter(t.kind for t in tasks) == {"solo": 241, "chain": 226}
    per_world = Counter(t.world for t in tasks if t.kind == "solo")
    assert sorted(per_world.values()) == [6, 15] + [20] * 11
    for wid, subs in per_world.items():
        lengths = sorted(t.length for t in tasks if t.world == wid and t.kind == "chain")
        top = {6: 5, 15: 14, 20: 20}[subs]
        assert lengths == list(range(2, top + 1)), wid


def test_axes_spread_over_every_long_storyline() -> None:
    solos = [t for t in v1().tasks.values() if t.kind == "solo"]
    for wid in v1().worlds:
        axes = {t.axis for t in solos if t.world == wid}
        if sum(1 for t in solos if t.world == wid) >= 7:
            assert axes == set(AXIS_ORDER), wid
    assert set(Counter(t.difficulty for t in solos)) == {"easy", "medium", "hard"}
    for seed in range(30):
        plan = storyline(derive_rng(seed), 20)
        assert {a for a, _ in plan} == set(AXIS_ORDER)
        assert all(a != b for (a, _), (b, _) in zip(plan, plan[1:], strict=False))


def test_worlds_use_distinct_domains_of_our_own() -> None:
    titles = [w.title for w in v1().worlds.values()]
    assert len(set(titles)) == 13 and len(DOMAINS) >= 13
    published = (
        "Cropline",
        "FleetGlass",
        "TideGlass",
        "Meridian",
        "RailGrid",
        "Maplewright",
        "TransitWeave",
        "TrailPing",
        "TerraPulse",
        "Tideglass",
        "GreenhouseGrid",
        "Loamwise",
    )
    assert not [t for t in titles if any(p in t for p in published)]


def test_prompts_vary_and_chains_name_no_earlier_minted_ids() -> None:
    tasks = v1().tasks
    openings = Counter(" ".join(t.prompt.split()[:6]) for t in tasks.values() if t.kind == "solo")
    assert openings.most_common(1)[0][1] < 20
    minted = re.compile(r"\b[a-z]{1,5}-[0-9a-f]{4}-[0-9a-f]{3,4}\b")
    for task in tasks.values():
        if task.kind == "chain":
            assert not minted.findall(task.prompt), task.id


def test_bank_is_compact() -> None:
    size = sum(p.stat().st_size for p in V1.rglob("*") if p.is_file())
    assert size < 20 * 1024 * 1024


def test_cli_build_verify_stats_and_a_corrupted_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b"
    assert main(["bank", "build", "--seed", "9", "--out", str(out), "--worlds", "1"]) == 0
    assert main(["bank", "verify", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ok   solvability" in text and "VERIFIED" in text
    assert main(["bank", "stats", str(out)]) == 0
    assert "axis (solo)" in capsys.readouterr().out
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    path = next((broken / "tasks").glob("*sub03.yaml"))
    data = bytearray(path.read_bytes())
    data[40] ^= 1
    path.write_bytes(bytes(data))
    assert main(["bank", "verify", str(broken)]) == 1
    text = capsys.readouterr().out
    assert f"FAIL manifest  tasks/{path.name}: content does not match its manifest sha256" in text
    assert "REFUSED" in text
    assert main(["bank", "build", "--seed", "9", "--out", str(out), "--worlds", "99"]) == 2
    keep = tmp_path / "precious"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    assert main(["bank", "build", "--seed", "9", "--out", str(keep), "--worlds", "1"]) == 2
    assert (keep / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_offline_models_rank_on_v1_and_chains_get_harder_with_length() -> None:
    from apiflow.agent import TrialSpec
    from apiflow.runner import play_trial_sync
    from apiflow.models import OFFLINE_PROFILES, make_model

    bank = v1()
    tasks = [t for t in bank.tasks.values() if t.world in ("w01", "w06")]
    rates: dict[str, float] = {}
    by_len: dict[str, list[int]] = {"short": [0, 0], "long": [0, 0]}
    for name in ["apiflow/oracle", "apiflow/blank", *(f"apiflow/sim:{p}" for p in OFFLINE_PROFILES)]:
        passed = 0
        for task in tasks:
            for epoch in range(2):
                record = play_trial_sync(
                    TrialSpec(
                        task=task,
                        world=bank.world_of(task),
                        seed=epoch,
                        epoch=epoch + 1,
                        bank_name=bank.name,
                        bank_hash=bank.hash,
                        run_id="t",
                        model_slug=name.replace("/", "-"),
                    ),
                    make_model(name, task, epoch),
                )
                passed += bool(record.passed)
                if name == "apiflow/sim:ace" and task.kind == "chain":
                    bucket = by_len["short" if task.length <= 8 else "long"]
                    bucket[0] += bool(record.passed)
                    bucket[1] += 1
        rates[name] = passed / (2 * len(tasks))
    assert rates["apiflow/oracle"] == 1.0 and rates["apiflow/blank"] == 0.0
    sims = [rates[f"apiflow/sim:{p}"] for p in OFFLINE_PROFILES]
    assert sims == sorted(sims, reverse=True)
    assert by_len["short"][0] / by_len["short"][1] > by_len["long"][0] / by_len["long"][1]


def test_a_failing_subtask_is_revised_and_a_failing_chain_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    import apiflow.authoring.generate.build as build
    from apiflow.authoring.generate.axes import AXES
    from apiflow.authoring.generate.plan import WorldShape

    calls = {"n": 0}
    for axis, draft in list(AXES.items()):

        def first_draft_broken(ctx, _draft=draft):  # type: ignore[no-untyped-def]
            out = _draft(ctx)
            calls["n"] += 1
            if calls["n"] == 1:
                out.g1 = []  # no state predicate: answering without calls would pass
            return out

        monkeypatch.setitem(AXES, axis, first_draft_broken)
    real_check = build.check_chains

    def failing_third(chains, world, subs, log):  # type: ignore[no-untyped-def]
        real_check(chains, world, subs, log)
        log.add(next(c.id for c in chains if c.length == 3), "chain_golden", False, "forced")

    monkeypatch.setattr(build, "check_chains", failing_third)
    grown = build.grow_world("t", 5, 0, WorldShape(4, 4), 0)
    assert len(grown.solos) == 4 and grown.revisions[0].startswith("t-w01-sub01 attempt 0: ")
    assert "decoy at step" in grown.revisions[0]  # the mint predicate remains; the decoy now passes
    assert [c["length"] for c in grown.chains] == [2]
    assert grown.revisions[-1] == "w01: chains truncated before 1to03"


def test_verify_refuses_a_bank_whose_report_does_not_reproduce(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from apiflow.bank import write_manifest

    out = tmp_path / "b"
    build_bank(11, out, worlds=1)
    report = out / "validation.json"
    report.write_text(report.read_text().replace('"ok": true', '"ok": false', 1))
    write_manifest(out, "s11")  # a consistent manifest: only the report re-check can catch it
    assert main(["bank", "verify", str(out)]) == 1
    out_text = capsys.readouterr().out
    assert "FAIL report               re-run differs from validation.json (first at result #0)" in out_text
