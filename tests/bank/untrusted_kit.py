"""Copies of ``bank/sample`` to corrupt, for the untrusted-bank tests (docs/design/061)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from apiflow.bank import DEFAULT_BANK, write_manifest

WORLD = "worlds/w01.yaml"
SUB = "tasks/sample-w01-sub01.yaml"
CHAIN = "tasks/sample-w01-chain-1to02.yaml"


def copy_sample(dest: Path) -> Path:
    """A fresh, verifiable copy of the sample bank at ``dest``."""
    shutil.copytree(DEFAULT_BANK, dest)
    return dest


def read(root: Path, rel: str) -> Any:
    return yaml.safe_load((root / rel).read_text())


def write(root: Path, rel: str, data: Any, rehash: bool = True) -> None:
    """Replace one file (YAML data or raw bytes/text) and, by default, re-hash the manifest."""
    path = root / rel
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data)
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    if rehash:
        write_manifest(root, "sample")
