"""Content digests of JSON documents, for every layer that pins a file by its own content.

A pinned document (a calibrated panel's fit, a bank manifest) carries the sha256 of its canonical
JSON without the ``sha256`` field itself; writer and reader must agree on the bytes, so both use
this one definition.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no spaces: equal documents, equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def content_hash(body: dict) -> str:
    """sha256 of the canonical JSON of the document without its ``sha256`` field."""
    return hashlib.sha256(canonical_json(body)).hexdigest()
