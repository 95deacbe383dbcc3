"""Where results go: ``--storage-options`` as the CLI reads them, and the output check made before work.

Every verb that opens a result store (grid, report, view, transcripts) takes the same flag and
must refuse the same bad input the same way, so it is parsed here once; every verb that writes
checks its output the same way (``check_output``) before it starts, so a mistake costs no work
and leaves nothing half-written.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

from apiflow.errors import UsageError, plain_message


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


def check_output(url: str | Path, *, folder: bool = True, flag: str | None = "--out") -> None:
    """Refuse now, before any work, a local output that writing would fail on later.

    ``url`` (a folder, or a file when not ``folder``) must exist as that kind or be creatable: its
    nearest existing parent a folder this process may write. An object store URL passes: its first
    request tells.

    Args:
        url: The output path or URL.
        folder: Whether a folder (not a file) is to be written there.
        flag: The argument that named ``url``, for the message (None: a positional).

    Raises:
        UsageError: ``url`` or a parent is a file, or the folder is read-only; one line naming
            the path at fault and the fix (``apiflow.errors.plain_message``).
    """
    text = str(url)
    if "://" in text and not text.startswith("file://"):
        return
    try:
        _probe(Path(text.removeprefix("file://")), folder)
    except OSError as exc:
        message = plain_message(exc, [flag, text] if flag else [text])
        if message is None:
            raise
        raise UsageError(message) from None


def _probe(path: Path, folder: bool) -> None:
    """Raise the ``OSError`` (naming the path at fault) that writing ``path`` would meet."""
    if path.exists():
        if folder != path.is_dir():
            raise _error(errno.ENOTDIR if folder else errno.EISDIR, path)
        if not os.access(path, os.W_OK | os.X_OK if folder else os.W_OK):
            raise _error(errno.EACCES, path)
        return
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent  # missing parents are made; the first existing one must be a folder
    if not parent.is_dir():
        raise _error(errno.ENOTDIR, parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _error(errno.EACCES, parent)


def _error(code: int, path: Path) -> OSError:
    return OSError(code, os.strerror(code), str(path))
