"""The parsed-bank cache: a hit is the bank a parse gives, and anything that could make it stale misses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import apiflow.bank.loader as loader
from apiflow.bank import DEFAULT_BANK, load_bank, write_manifest
from apiflow.bank.cache import CACHE_ENV, KEEP, cache_path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(folder))
    return folder


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every real parse of a bank, by root."""
    calls: list[Path] = []
    real = loader._parse_bank

    def counted(root: Path, *args: object) -> loader.Bank:
        calls.append(root)
        return real(root, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "_parse_bank", counted)
    return calls


def _copy_bank(tmp_path: Path) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(DEFAULT_BANK, root)
    return root


def test_a_hit_is_the_parsed_bank_and_parses_nothing(cache: Path, parses: list[Path], tmp_path: Path) -> None:
    root = _copy_bank(tmp_path)
    first = load_bank(root, cache=True)
    assert parses == [root] and len(list(cache.glob("*.pickle"))) == 1
    again = load_bank(root, cache=True)
    assert parses == [root]  # the second load came from the cache
    fresh = load_bank(root)
    assert again == fresh == first and again.path == root
    assert again.worlds == fresh.worlds and list(again.tasks) == list(fresh.tasks)


def test_the_cache_follows_the_bank_not_its_folder(cache: Path, parses: list[Path], tmp_path: Path) -> None:
    root = _copy_bank(tmp_path)
    load_bank(root, cache=True)
    moved = tmp_path / "elsewhere"
    shutil.copytree(root, moved)
    bank = load_bank(moved, cache=True)
    assert parses == [root] and bank.path == moved  # same hash: a hit, with its own folder


def test_a_changed_bank_misses(cache: Path, parses: list[Path], tmp_path: Path) -> None:
    root = _copy_bank(tmp_path)
    before = load_bank(root, cache=True)
    task_file = sorted((root / "tasks").glob("*.yaml"))[0]
    task_file.write_text(task_file.read_text() + "\n# edited\n")
    manifest = json.loads((root / "manifest.json").read_text())
    write_manifest(root, manifest["bank"])
    after = load_bank(root, cache=True)
    assert after.hash != before.hash and parses == [root, root]


def test_a_changed_file_without_a_new_manifest_is_still_refused(cache: Path, tmp_path: Path) -> None:
    root = _copy_bank(tmp_path)
    load_bank(root, cache=True)
    task_file = sorted((root / "tasks").glob("*.yaml"))[0]
    task_file.write_text(task_file.read_text() + "\n# edited\n")
    with pytest.raises(loader.UsageError, match="manifest"):
        load_bank(root, cache=True)  # the manifest is verified before the cache is asked


def test_other_code_misses(
    cache: Path, parses: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy_bank(tmp_path)
    load_bank(root, cache=True)
    monkeypatch.setattr("apiflow.bank.cache.code_digest", lambda: "0" * 64)
    load_bank(root, cache=True)
    assert parses == [root, root]


def test_untrusted_or_broken_cache_files_are_ignored(cache: Path, parses: list[Path], tmp_path: Path) -> None:
    root = _copy_bank(tmp_path)
    bank = load_bank(root, cache=True)
    path = cache_path(bank.hash)
    assert path is not None
    path.chmod(0o666)  # writable by others: someone else could have put code in it
    assert load_bank(root, cache=True) == bank and len(parses) == 2
    path.chmod(0o600)
    path.write_bytes(b"not a pickle")
    assert load_bank(root, cache=True) == bank and len(parses) == 3
    path.write_bytes(__import__("pickle").dumps({"not": "a bank"}))
    assert load_bank(root, cache=True) == bank and len(parses) == 4


def test_cache_off_and_unwritable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parses: list[Path]
) -> None:
    root = _copy_bank(tmp_path)
    monkeypatch.setenv(CACHE_ENV, "off")
    load_bank(root, cache=True)
    load_bank(root, cache=True)
    assert len(parses) == 2 and cache_path("x") is None
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv(CACHE_ENV, str(blocked / "cache"))
    assert load_bank(root, cache=True) == load_bank(root)  # an unwritable cache only costs the parse


def test_without_the_flag_nothing_is_cached(cache: Path, tmp_path: Path) -> None:
    load_bank(_copy_bank(tmp_path))
    assert not cache.exists()


def test_a_bank_that_will_not_pickle_is_simply_not_cached(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> bytes:
        raise TypeError("cannot pickle '_thread.lock' object")

    monkeypatch.setattr("apiflow.bank.cache.pickle.dumps", refuse)
    root = _copy_bank(tmp_path)
    assert load_bank(root, cache=True) == load_bank(root)
    assert not list(cache.glob("*.pickle")) and not list(cache.glob(".tmp-*"))


def test_the_folder_keeps_only_the_newest_entries(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy_bank(tmp_path)
    for n in range(KEEP + 3):  # every code change is a new key
        monkeypatch.setattr("apiflow.bank.cache.code_digest", lambda n=n: f"{n:064d}")
        load_bank(root, cache=True)
    kept = list(cache.glob("*.pickle"))
    assert len(kept) == KEEP
    assert cache_path(load_bank(root).hash) in kept  # the newest (the last code) is kept
