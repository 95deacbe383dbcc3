"""``--storage-options``: the fsspec options a results folder is opened with, as the CLI reads them.

Every verb that opens a result store (grid, report, view, transcripts) takes the same flag and
must refuse the same bad input the same way, so it is parsed here once.
"""

from __future__ import annotations

import json
from typing import Any

from apiflow.errors import UsageError


def storage_options(text: str | None) -> dict[str, Any] | None:
    """The JSON object given on the command line, or None when none was given.

    Raises:
        UsageError: the text is not a JSON object.
    """
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise UsageError("--storage-options must be a JSON object") from None
    if not isinstance(value, dict):
        raise UsageError("--storage-options must be a JSON object")
    return value
