"""A results folder's canary key: the secret that per-trial canary forms derive from.

A trial's canary forms used to derive from its seed, task and epoch alone, all of which its
record shows; a released transcript then predicted the forms of any new run with the same seed.
Now a run that writes a results folder draws 32 random bytes once, at its first trial, and keeps
them beside its results (``<out>/_secret/canary.key``, through the object layer, so an ``s3://``
output keeps its key too); the canary seed is an HMAC of the trial's seed, task and epoch under
that key (``apiflow.agent.ids.canary_seed``). Records carry only the key's id (``CanaryKey.id``),
enough to tell which key a re-grade needs. Every reader that publishes results (exports, the
viewer, ``transcripts unpack``) skips names starting with ``_``, so the key never leaves with
them. docs/design/011-grader-exploit-audit.md, "Canary keys".
"""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass, field
from typing import Any

from apiflow.errors import UsageError
from apiflow.results.objects import ObjectFolder

KEY_PARTS = ("_secret", "canary.key")
"""Where a results folder keeps its key (``_``: no exporter or viewer lists it)."""
KEY_BYTES = 32
FOLDER = "folder"
NONE = "none"
MODES = (FOLDER, NONE)
"""``folder``: the results folder's key (made at its first run); ``none``: no key, the public
derivation of before (records reproducible from their seed alone: tests, benchmarks, audits)."""


@dataclass(frozen=True)
class CanaryKey:
    """A secret canary key; its ``repr`` and ``id`` never show the secret."""

    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise ValueError(f"a canary key is {KEY_BYTES} bytes, not {len(self.secret)}")

    @property
    def id(self) -> str:
        """The key's public fingerprint (12 hex of sha256): what records and manifests name."""
        return hashlib.sha256(self.secret).hexdigest()[:12]

    def __repr__(self) -> str:
        return f"CanaryKey(id={self.id})"

    def file_bytes(self) -> bytes:
        """The key file's content: the secret in hex, one line."""
        return self.secret.hex().encode() + b"\n"

    @classmethod
    def new(cls) -> CanaryKey:
        """A fresh random key."""
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def parse(cls, data: bytes, where: str) -> CanaryKey:
        """A key from its file's bytes.

        Raises:
            UsageError: ``data`` is not a key file (``where`` names it).
        """
        try:
            secret = bytes.fromhex(data.decode("ascii").strip())
            return cls(secret)
        except (UnicodeDecodeError, ValueError):
            raise UsageError(f"{where} is not a canary key ({KEY_BYTES * 2} hex characters)") from None


def key_path(objects: ObjectFolder) -> str:
    """The key's full path in a results folder."""
    return objects.path(*KEY_PARTS)


def folder_key(objects: ObjectFolder) -> CanaryKey:
    """The folder's key, made now if it has none.

    Create-only: concurrent first runs (a driver and its actors, two workers) all end with the one
    key that was written first, and a resume finds it again. Locally its folder and file are the
    owner's alone (the folder first: the file is never readable by others, even while written).
    """
    path = key_path(objects)
    if objects.local:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fresh = CanaryKey.new()
    if objects.create_only(path, fresh.file_bytes()):
        if objects.local:
            os.chmod(path, 0o600)
        return fresh
    return CanaryKey.parse(objects.cat(path), path)


def stored_key(objects: ObjectFolder) -> CanaryKey | None:
    """The folder's key, or None when it has none (never made by a run, or a run without keys)."""
    path = key_path(objects)
    try:
        return CanaryKey.parse(objects.cat(path), path)
    except FileNotFoundError:
        return None


def read_key(location: str, storage_options: dict[str, Any] | None = None) -> CanaryKey:
    """The key at ``location``: a key file, or a results folder (local or ``s3://``) holding one.

    Raises:
        UsageError: No key there, or not a key file.
    """
    if "://" not in location and os.path.isfile(location):
        try:
            with open(location, "rb") as handle:
                return CanaryKey.parse(handle.read(), location)
        except OSError as exc:
            raise UsageError(f"cannot read the canary key {location}: {exc.strerror}") from None
    found = stored_key(ObjectFolder(location, storage_options))
    if found is None:
        raise UsageError(
            f"{location}: no canary key there (a key file, or a results folder with {'/'.join(KEY_PARTS)})"
        )
    return found
