"""Bank files are untrusted: caps, safe YAML, names checked before opening, manifest refusals.

docs/design/061-untrusted-banks.md. Every refusal is one UsageError line naming the file and the cap;
through the CLI it is one stderr line and exit code 2 (``bank verify`` lists its problems, exit 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from untrusted_kit import CHAIN, SUB, WORLD, copy_sample, read, write

from apiflow.bank import files as caps
from apiflow.bank import load_bank
from apiflow.bank.manifest import MANIFEST, bank_hash, verify_manifest
from apiflow.cli import main
from apiflow.errors import UsageError


def refused(root: Path) -> str:
    with pytest.raises(UsageError) as error:
        load_bank(root)
    message = str(error.value)
    assert "\n" not in message and len(message) <= 600, message
    return message


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    return copy_sample(tmp_path / "bank")


def test_the_shipped_banks_sit_well_inside_every_cap() -> None:
    """At least 10x headroom on every count and size cap (measured on the files, not by loading)."""
    import yaml

    for name in ("sample", "v1"):
        root = Path(__file__).resolve().parents[2] / "bank" / name
        listed = json.loads((root / MANIFEST).read_text())["files"]
        sizes = [(root / rel).stat().st_size for rel in listed]
        assert len(listed) * 10 < caps.MAX_BANK_FILES and sum(sizes) * 10 < caps.MAX_BANK_BYTES
        assert max(sizes) * 10 < caps.MAX_FILE_BYTES and max(len(rel) for rel in listed) * 5 < caps.MAX_NAME_LENGTH
        assert sum(rel.startswith("tasks/") for rel in listed) * 10 < caps.MAX_TASKS
        for rel in (r for r in listed if r.startswith("worlds/")):
            world = yaml.load((root / rel).read_text(), Loader=yaml.CSafeLoader)
            assert len(world["routes"]) * 10 < caps.MAX_ROUTES_PER_WORLD
            assert max(len(r["rules"]) for r in world["routes"]) * 10 < caps.MAX_RULES_PER_ROUTE


def test_sample_task_anchors_still_load(bank: Path) -> None:
    assert "&id001" in (bank / SUB).read_text() and "*id001" in (bank / SUB).read_text()
    assert load_bank(bank).task("sample-w01-sub01").golden


@pytest.mark.parametrize(
    ("text", "cap"),
    [
        ("a: " + "[" * 100_000 + "]" * 100_000, "MAX_YAML_DEPTH"),  # crashed libyaml's composer (SIGSEGV)
        ("- - " * 70 + "x", "MAX_YAML_DEPTH"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                      for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
            "MAX_YAML_NODES",
        ),  # billion laughs: 10**9 nodes from 600 bytes
        ("x: &x\n  y: *x\n", "recursive"),
        ("s: " + "z" * (caps.MAX_STRING_LENGTH + 1), "MAX_STRING_LENGTH"),
        ("!!python/object/apply:os.system ['true']", "not valid YAML"),
        ("when: 2026-01-01", "not JSON data"),
        ("b: !!binary aGk=", "not JSON data"),
        ("s: !!set {a, b}", "not JSON data"),
        ("a: [1,\n  b: }", "not valid YAML"),
    ],
)
def test_hostile_yaml_is_refused_in_one_line(bank: Path, text: str, cap: str) -> None:
    write(bank, WORLD, text)
    message = refused(bank)
    assert cap in message and "w01.yaml" in message


def test_invalid_utf8_and_nul_bytes_are_refused(bank: Path) -> None:
    write(bank, SUB, b"id: \xff\xfe")
    assert "not UTF-8" in refused(bank)
    write(bank, SUB, b"id: a\x00b")
    assert "not valid YAML" in refused(bank)


def test_file_size_cap_is_checked_before_reading(bank: Path) -> None:
    with (bank / WORLD).open("ab") as handle:
        handle.truncate(caps.MAX_FILE_BYTES + 1)  # sparse: costs no disk
    _list_in_manifest(bank, WORLD)
    assert "MAX_FILE_BYTES" in refused(bank)


def test_total_bank_bytes_and_file_count_caps(bank: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import apiflow.bank.manifest as manifest

    monkeypatch.setattr(manifest, "MAX_BANK_BYTES", 10_000)  # sample: 45 KB of data files
    assert "MAX_BANK_BYTES" in refused(bank)
    monkeypatch.setattr(manifest, "MAX_BANK_BYTES", caps.MAX_BANK_BYTES)
    monkeypatch.setattr(manifest, "MAX_BANK_FILES", 10)  # sample: 14
    assert "MAX_BANK_FILES" in refused(bank)


@pytest.mark.parametrize(
    ("cap", "edit"),
    [
        ("MAX_ROUTES_PER_WORLD", lambda w: w.update(routes=[{**w["routes"][0], "path": f"/r{i}"} for i in range(1001)])),
        ("MAX_RULES_PER_ROUTE", lambda w: w["routes"][0].update(rules=w["routes"][0]["rules"] * 300)),
    ],
)
def test_route_and_rule_count_caps(bank: Path, cap: str, edit: Any) -> None:
    world = read(bank, WORLD)
    edit(world)
    write(bank, WORLD, world)
    assert cap in refused(bank)


def test_task_and_world_count_caps(bank: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import apiflow.bank.loader as loader

    monkeypatch.setattr(loader, "MAX_TASKS", 12)  # sample: 13
    assert "MAX_TASKS" in refused(bank)
    monkeypatch.setattr(loader, "MAX_TASKS", caps.MAX_TASKS)
    monkeypatch.setattr(loader, "MAX_WORLDS", 0)
    assert "MAX_WORLDS" in refused(bank)


def _list_in_manifest(bank: Path, name: str, sha: str = "0" * 64) -> None:
    manifest = json.loads((bank / MANIFEST).read_text())
    manifest["files"][name] = sha
    manifest["hash"] = bank_hash(manifest["files"])
    (bank / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "name",
    [
        "../outside.yaml",
        "tasks/../../outside.yaml",
        "/etc/passwd.yaml",
        "tasks/a\x00.yaml",
        "tasks\\..\\x.yaml",
        "C:/x.yaml",
        "tasks//x.yaml",
        "tasks/./x.yaml",
        "tasks/.hidden.yaml",
        "tasks/x\n.yaml",
        "tasks/x.sh",
        "x" * 300 + ".yaml",
    ],
)
def test_traversal_names_in_the_manifest_are_refused_before_anything_is_opened(
    bank: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (bank.parent / "outside.yaml").write_text("secret: 1\n")
    _list_in_manifest(bank, name)
    opened: list[str] = []
    real_open = os.open

    def spy(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    message = refused(bank)
    assert "refused before opening" in message
    assert not any("outside" in p or "passwd" in p for p in opened)


def test_symlinks_pointing_out_of_the_bank_are_refused(bank: Path) -> None:
    outside = bank.parent / "secret.yaml"
    outside.write_text("id: x\n")
    (bank / "tasks" / "leak.yaml").symlink_to(outside)
    _list_in_manifest(bank, "tasks/leak.yaml", json.loads("{}") or __import__("hashlib").sha256(b"id: x\n").hexdigest())
    assert "symlink pointing out of the bank" in refused(bank)
    (bank / "tasks" / "leak.yaml").unlink()
    (bank / "worlds2").symlink_to(bank.parent)  # a directory link: not walked, and names through it refused
    write(bank, WORLD, (bank / WORLD).read_bytes())
    _list_in_manifest(bank, "worlds2/secret.yaml")
    assert "symlink pointing out of the bank" in refused(bank)


def test_a_fifo_under_a_bank_name_does_not_hang(bank: Path) -> None:
    os.mkfifo(bank / "tasks" / "pipe.yaml")
    _list_in_manifest(bank, "tasks/pipe.yaml")
    assert "missing" in refused(bank)  # not a regular file: never listed as present, never opened


def test_unlisted_hidden_files_are_not_loaded(bank: Path) -> None:
    (bank / "tasks" / ".evil.yaml").write_text("this: is not hashed\n")
    assert load_bank(bank).task("sample-w01-sub01")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda m: m.update(hash="0" * 64), "bank hash does not match"),
        (lambda m: m.update(hash="zz"), "'hash' is not a sha256"),
        (lambda m: m.update(bank="../x"), "'bank' is not a bank name"),
        (lambda m: m.update(files=[]), "'files' is not an object"),
        (lambda m: m["files"].update({SUB: 5}), "no sha256"),
        (lambda m: m.clear(), "'files' is not an object"),
    ],
)
def test_manifest_shape_and_hash_mismatch_are_one_line_refusals(bank: Path, edit: Any, expected: str) -> None:
    manifest = json.loads((bank / MANIFEST).read_text())
    edit(manifest)
    (bank / MANIFEST).write_text(json.dumps(manifest))
    assert expected in refused(bank)


def test_deep_or_huge_manifest_is_refused(bank: Path) -> None:
    (bank / MANIFEST).write_text("[" * 200_000)
    assert "unreadable manifest" in refused(bank)
    with (bank / MANIFEST).open("ab") as handle:
        handle.truncate(caps.MAX_FILE_BYTES + 1)
    assert "MAX_FILE_BYTES" in refused(bank)


def test_a_changed_file_fails_the_manifest_check(bank: Path) -> None:
    (bank / CHAIN).write_text((bank / CHAIN).read_text() + "\n# edited\n")
    message = refused(bank)
    assert "failed its manifest check" in message and "does not match its manifest sha256" in message
    assert verify_manifest(bank)[1] == [f"{CHAIN}: content does not match its manifest sha256"]


def test_chain_with_a_huge_length_or_bad_id_is_refused(bank: Path) -> None:
    chain = read(bank, CHAIN)
    write(bank, CHAIN, {**chain, "length": 10**12})
    assert "needs subtasks" in refused(bank)
    write(bank, CHAIN, {**chain, "id": "not an id"})
    assert "chain id" in refused(bank)


def test_cli_refuses_a_tampered_bank_with_one_line_and_no_traceback(bank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (bank / SUB).write_text((bank / SUB).read_text().replace("sample-w01-sub01", "sample-w01-sub01", 1) + "#x\n")
    for argv in (["task", "list", "--bank", str(bank)], ["run", "--model", "apiflow/oracle", "--task", "sample-w01-sub01", "--bank", str(bank)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "failed its manifest check" in err and "Traceback" not in err
    assert main(["bank", "verify", str(bank), "--manifest-only"]) == 1
    out = capsys.readouterr().out
    assert "FAIL manifest" in out and "REFUSED" in out
    # the real console script, in its own process: exit code and stderr as a user sees them
    done = subprocess.run(
        [sys.executable, "-m", "apiflow.cli", "task", "list", "--bank", str(bank)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
