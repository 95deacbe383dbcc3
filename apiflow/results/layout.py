"""The names of things in a result store: its folders, its special files and a model's path token.

Shared by the writer (``store``), the checked readers (``reading``) and the viewer's listing
(``source``); the layout itself is drawn in ``store``'s docstring and docs/design/042.
"""

from __future__ import annotations

import hashlib
import re

MANIFEST = "manifest.json"
COVERED = "compacted/_batches.json"
"""The batch objects the last ``compact`` folded into the per-model files (``_``: not a row file)."""
BATCHES = "batches"
"""``rows/batches/``: batch row objects (one model token never equals it: tokens are ``model=…``)."""
ROW_SUFFIXES = {"parquet": ".parquet", "arrow": ".arrow"}
"""Per-trial row formats. Parquet is the default; Arrow IPC is far cheaper to write
(docs/results/042-result-store-measurements.md). Compacted files are always Parquet; readers accept
both."""
ROW_ENDINGS = tuple(ROW_SUFFIXES.values())


def model_token(model_slug: str) -> str:
    """A path-safe, collision-free directory token for a model slug (slugs hold ``/`` and ``:``)."""
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", model_slug)
    return f"{readable}-{hashlib.sha256(model_slug.encode()).hexdigest()[:8]}"


def is_batch(path: str) -> bool:
    """Whether a row object is a batch object (``rows/batches/<digest>.parquet``)."""
    return path.rsplit("/", 2)[-2] == BATCHES


def name(path: str) -> str:
    """An object's name (its last path part)."""
    return path.rsplit("/", 1)[-1]


def stem(path: str) -> str:
    """An object's name without its suffix (a trial id, a batch digest)."""
    return name(path).rsplit(".", 1)[0]
