"""Find credentials in bytes: plain, URL-encoded and base64, also inside Parquet/Arrow/gzip files.

Written independently of ``apiflow.redact`` (a scanner that shared the redactor's idea of an
encoding could not catch the redactor's mistakes).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

import pyarrow as pa
import pyarrow.parquet as pq

_B64_TOKEN = re.compile(rb"[A-Za-z0-9+/_-]{16,}={0,2}")


@dataclass(frozen=True)
class Leak:
    """A credential found somewhere."""

    key_name: str
    form: str
    where: str

    def __str__(self) -> str:
        return f"{self.key_name} ({self.form}) in {self.where}"


def needles(key: str) -> dict[str, bytes]:
    """Byte strings whose presence means ``key`` leaked, by form."""
    forms = {"plain": key, "url": quote(key, safe=""), "url+": quote_plus(key)}
    for offset in range(3):  # base64 of the key at each alignment inside a longer blob
        encoded = base64.b64encode(b"A" * offset + key.encode()).decode()
        core = encoded[4:-4]  # drop the groups that also hold neighbouring bytes
        forms[f"base64@{offset}"] = core
        forms[f"base64url@{offset}"] = core.replace("+", "-").replace("/", "_")
    return {name: value.encode() for name, value in forms.items()}


def _views(name: str, data: bytes) -> list[tuple[str, bytes]]:
    """The raw bytes plus every decoded view of them (Parquet/Arrow cells, gzip, base64 tokens)."""
    views = [(name, data)]
    if data.startswith(b"PAR1"):
        table = pq.read_table(io.BytesIO(data))
        views.append((f"{name} [parquet cells]", json.dumps(table.to_pylist(), default=str).encode()))
    elif data.startswith(b"ARROW1"):
        table = pa.ipc.open_file(io.BytesIO(data)).read_all()
        views.append((f"{name} [arrow cells]", json.dumps(table.to_pylist(), default=str).encode()))
    elif data.startswith(b"\x1f\x8b"):
        views.append((f"{name} [gunzip]", gzip.decompress(data)))
    decoded = []
    for token in _B64_TOKEN.findall(data):
        try:
            decoded.append(base64.b64decode(token + b"=" * (-len(token) % 4), altchars=b"-_" if b"-" in token or b"_" in token else None))
        except (binascii.Error, ValueError):
            continue
    if decoded:
        views.append((f"{name} [base64-decoded tokens]", b"\n".join(decoded)))
    return views


def scan(sources: dict[str, bytes], keys: dict[str, str]) -> list[Leak]:
    """Every (key, form, place) where a key shows up in ``sources`` (name -> bytes)."""
    leaks = []
    wanted = {name: needles(key) for name, key in keys.items()}
    for source, data in sources.items():
        for where, view in _views(source, data):
            for key_name, forms in wanted.items():
                leaks += [Leak(key_name, form, where) for form, needle in forms.items() if needle in view]
    return leaks


def files_under(*roots: Path) -> dict[str, bytes]:
    """Every regular file below ``roots`` (sockets and vanished files skipped), by path."""
    found = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            try:
                if path.is_file() and not path.is_symlink():
                    found[str(path)] = path.read_bytes()
            except OSError:
                continue
    return found
