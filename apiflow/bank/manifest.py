"""Content-hash manifests: every bank file's sha256 and one bank hash over them all.

The manifest is as untrusted as the files it lists (docs/design/061-untrusted-banks.md): its
shape, every listed name and the file count and sizes are checked before any listed file is
opened, and a name that could leave the bank (``..``, absolute, a symlink out) is never opened.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from apiflow.bank.files import (
    MAX_BANK_BYTES,
    MAX_BANK_FILES,
    MAX_FILE_BYTES,
    name_problem,
    read_capped,
    resolved_inside,
    shown,
)
from apiflow.hashing import canonical_json
from apiflow.errors import UsageError

MANIFEST = "manifest.json"
DATA_SUFFIXES = (".yaml", ".yml", ".json")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_BANK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes (a bank file: capped at ``MAX_FILE_BYTES``)."""
    return hashlib.sha256(read_capped(path)).hexdigest()


def data_files(root: Path) -> list[str]:
    """Bank data files below ``root`` (posix relative paths, sorted), the manifest excluded.

    Walks without following directory symlinks and stops counting past ``MAX_BANK_FILES``.
    """
    found: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = Path(folder)
        for name in names:
            path = base / name
            if name.startswith(".") or not name.endswith(DATA_SUFFIXES) or not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            if rel == MANIFEST:
                continue
            found.append(rel)
            if len(found) > MAX_BANK_FILES:
                return sorted(found)
    return sorted(found)


def bank_hash(files: dict[str, str]) -> str:
    """One hash over the (path, sha256) pairs: canonical JSON, sorted keys."""
    return hashlib.sha256(canonical_json(files)).hexdigest()


def build_manifest(root: Path, name: str) -> dict[str, object]:
    """The manifest a bank folder should carry (not written)."""
    files = {rel: file_sha256(root / rel) for rel in data_files(root)}
    return {"bank": name, "format": 1, "files": files, "hash": bank_hash(files)}


def write_manifest(root: Path, name: str) -> dict[str, object]:
    """Write ``manifest.json`` (stable bytes: sorted, indented, trailing newline)."""
    manifest = build_manifest(root, name)
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def _shape_problem(manifest: Any) -> str | None:
    """Why a parsed manifest is not one (None when its fields have the right shape)."""
    if not isinstance(manifest, dict):
        return "not a JSON object"
    files, recorded, name = manifest.get("files"), manifest.get("hash"), manifest.get("bank")
    if not isinstance(files, dict):
        return "'files' is not an object"
    if len(files) > MAX_BANK_FILES:
        return f"lists {len(files)} files, more than MAX_BANK_FILES={MAX_BANK_FILES}"
    if not isinstance(recorded, str) or not _SHA256.match(recorded):
        return "'hash' is not a sha256 hex digest"
    if not isinstance(name, str) or not _BANK_NAME.match(name):
        return "'bank' is not a bank name (letters, digits, '.', '_', '-'; at most 64)"
    for rel, sha in files.items():
        if not isinstance(sha, str) or not _SHA256.match(sha):
            return f"entry {shown(rel)} has no sha256 hex digest"
    return None


def read_manifest(root: Path) -> tuple[dict[str, Any], str | None]:
    """The parsed manifest and, when it cannot be used, why (one line)."""
    path = root / MANIFEST
    if not path.is_file():
        return {}, f"{path}: no manifest.json (not a bank folder?)"
    if resolved_inside(root, MANIFEST) is None:
        return {}, f"{path}: a symlink pointing out of the bank"
    try:
        manifest = json.loads(read_capped(path))
    except UsageError as exc:
        return {}, str(exc)
    except (ValueError, RecursionError) as exc:
        return {}, f"{path}: unreadable manifest ({' '.join(str(exc).split())[:200]})"
    problem = _shape_problem(manifest)
    if problem is not None:
        return {}, f"{path}: unreadable manifest ({problem})"
    return manifest, None


def verify_manifest(root: Path) -> tuple[dict[str, object], list[str]]:
    """Read the manifest and list every mismatch (empty list = the bank is intact).

    Every problem is one line. No listed file is opened before its name, its place (inside the
    bank, symlinks resolved) and the sizes have been checked.
    """
    manifest, unusable = read_manifest(root)
    if unusable is not None:
        return {}, [unusable]
    files: dict[str, str] = manifest["files"]
    listing = data_files(root)
    if len(listing) > MAX_BANK_FILES:
        return manifest, [f"bank: more than MAX_BANK_FILES={MAX_BANK_FILES} data files"]
    present = set(listing)
    problems: list[str] = []
    usable: dict[str, Path] = {}
    total = 0
    for rel in sorted(files):
        problem = name_problem(rel, DATA_SUFFIXES)
        path = resolved_inside(root, rel) if problem is None else None
        if problem is not None:
            problems.append(f"{shown(rel)}: refused before opening: {problem}")
        elif path is None:
            problems.append(f"{rel}: refused before opening: a symlink pointing out of the bank")
        elif rel not in present:
            problems.append(f"{rel}: listed in the manifest but missing")
        elif (size := path.stat().st_size) > MAX_FILE_BYTES:
            problems.append(f"{rel}: {size} bytes exceeds MAX_FILE_BYTES={MAX_FILE_BYTES}")
        else:
            total += size
            usable[rel] = path
    if total > MAX_BANK_BYTES:
        problems.append(f"bank: {total} bytes of data files exceeds MAX_BANK_BYTES={MAX_BANK_BYTES}")
    else:
        problems += [
            f"{rel}: content does not match its manifest sha256"
            for rel, path in usable.items()
            if file_sha256(path) != files[rel]
        ]
    problems += [f"{shown(rel)}: present but not listed in the manifest" for rel in sorted(present - set(files))]
    if bank_hash(files) != manifest["hash"]:
        problems.append("manifest: bank hash does not match its file list")
    return manifest, problems
