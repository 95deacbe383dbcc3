"""Content-hash manifests: every bank file's sha256 and one bank hash over them all."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

MANIFEST = "manifest.json"
DATA_SUFFIXES = (".yaml", ".yml", ".json")


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def data_files(root: Path) -> list[str]:
    """Bank data files below ``root`` (posix relative paths, sorted), the manifest excluded."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.suffix in DATA_SUFFIXES and p.name != MANIFEST and not p.name.startswith(".")
    )


def bank_hash(files: dict[str, str]) -> str:
    """One hash over the (path, sha256) pairs: canonical JSON, sorted keys."""
    canonical = json.dumps(files, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def build_manifest(root: Path, name: str) -> dict[str, object]:
    """The manifest a bank folder should carry (not written)."""
    files = {rel: file_sha256(root / rel) for rel in data_files(root)}
    return {"bank": name, "format": 1, "files": files, "hash": bank_hash(files)}


def write_manifest(root: Path, name: str) -> dict[str, object]:
    """Write ``manifest.json`` (stable bytes: sorted, indented, trailing newline)."""
    manifest = build_manifest(root, name)
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def verify_manifest(root: Path) -> tuple[dict[str, object], list[str]]:
    """Read the manifest and list every mismatch (empty list = the bank is intact)."""
    path = root / MANIFEST
    if not path.is_file():
        return {}, [f"{path}: no manifest.json (not a bank folder?)"]
    try:
        manifest = json.loads(path.read_text())
        files: dict[str, str] = dict(manifest["files"])
        recorded = str(manifest["hash"])
    except (ValueError, KeyError, TypeError) as exc:
        return {}, [f"{path}: unreadable manifest ({exc})"]
    problems = []
    present = set(data_files(root))
    for rel, sha in sorted(files.items()):
        if rel not in present:
            problems.append(f"{rel}: listed in the manifest but missing")
        elif file_sha256(root / rel) != sha:
            problems.append(f"{rel}: content does not match its manifest sha256")
    problems += [f"{rel}: present but not listed in the manifest" for rel in sorted(present - set(files))]
    if bank_hash(files) != recorded:
        problems.append("manifest: bank hash does not match its file list")
    return manifest, problems
