"""A parsed-bank cache: the verified ``Bank`` pickled once, keyed by the bank hash and the code.

Parsing ``bank/v1`` (481 YAML files into pydantic models) costs seconds of CPU, and a grid pays
it in the driver and again in every worker process. With the cache a process verifies the
manifest as always (every listed file's sha256) and unpickles the parsed bank instead, a small
fraction of the parse (docs/design/042-result-store.md, "The bank, once per machine"; figures in
docs/results/042-result-store-measurements.md).

The key covers everything that decides the parsed objects: the bank hash (the content of every
listed file), the sha256 of the ``apiflow`` source that defines and builds them, and the Python
and pydantic versions. A changed file, a changed model class or another interpreter is a miss,
never a stale hit. The cache holds pickles, which run code when loaded: it lives in the user's
own cache folder (created 0700), and a file not owned by this user or writable by others is
ignored, so only this user's own earlier processes can have written what is read.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

CACHE_ENV = "APIFLOW_BANK_CACHE"
"""Folder of the cache (default ``$XDG_CACHE_HOME/apiflow/banks`` or ``~/.cache/apiflow/banks``);
``off`` disables it."""

KEEP = 8
"""Cache files kept per folder (newest first): every code change makes a new key, so without a bound the
folder would grow by one parsed bank (~4 MB for bank/v1) per edit of ``apiflow``."""

_CODE = Path(__file__).resolve().parents[1]
"""The ``apiflow`` package: its source is part of the key (model classes decide the pickle)."""


def cache_dir() -> Path | None:
    """Where cached banks live, or None when the cache is off."""
    value = os.environ.get(CACHE_ENV)
    if value == "off":
        return None
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "apiflow" / "banks"


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 over the ``apiflow`` sources (path and bytes), Python and pydantic versions."""
    import pydantic

    digest = hashlib.sha256(f"{sys.version}\0{pydantic.VERSION}\0".encode())
    for path in sorted(_CODE.rglob("*.py")):
        digest.update(path.relative_to(_CODE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_path(bank_hash: str) -> Path | None:
    """The cache file of the bank with this hash under the running code, or None (cache off)."""
    folder = cache_dir()
    if folder is None:
        return None
    key = hashlib.sha256(f"{bank_hash}\0{code_digest()}".encode()).hexdigest()[:40]
    return folder / f"{key}.pickle"


def read_cached(bank_hash: str) -> Any | None:
    """The cached parsed bank of this hash, or None (miss, cache off, or a file we do not trust)."""
    path = cache_path(bank_hash)
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return None
            data = handle.read()
        return pickle.loads(data)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None  # absent, unreadable, or written by code this key did not foresee: parse instead


def write_cached(bank_hash: str, bank: Any) -> None:
    """Store a parsed bank (atomically: temp file, then rename); failures are ignored."""
    path = cache_path(bank_hash)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(pickle.dumps(bank, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path.parent)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        # a read-only home, a full disk, or an object that will not pickle: the next process parses again
        return


def _prune(folder: Path) -> None:
    """Keep the ``KEEP`` newest cache files (another process may be pruning too: misses are fine)."""
    found = []
    for entry in folder.glob("*.pickle"):
        try:
            found.append((entry.stat().st_mtime_ns, entry))
        except FileNotFoundError:
            continue
    for _, old in sorted(found, reverse=True)[KEEP:]:
        old.unlink(missing_ok=True)
