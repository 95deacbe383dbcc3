"""Errors that reach the user as one clear line and exit code 2 (never a traceback).

``UsageError`` is raised for bad input the code recognises. ``plain_message`` covers the rest of
the user's ordinary mistakes, which surface as the OS's or the object store's own errors: an
output path that is a file or read-only, an ``s3://`` URL with no credentials or no endpoint.
Each entry point (``apiflow``'s ``main``, ``python -m cluster.driver``) turns those into one line;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from argparse import Namespace
from collections.abc import Callable, Collection, Sequence
from pathlib import Path


class UsageError(Exception):
    """Bad input from the user: unknown task or model, bad bank, bad arguments or files."""


# botocore's exceptions, by qualified name: matched without importing botocore.
_NO_CREDENTIALS = {"botocore.exceptions.NoCredentialsError", "botocore.exceptions.PartialCredentialsError"}
_NO_CONNECTION = {"botocore.exceptions.ConnectionError", "botocore.exceptions.ReadTimeoutError"}
_REMOTE = re.compile(r"[a-z][a-z0-9+.-]*://")
_CLIENT_ERROR = "botocore.exceptions.ClientError"
_DENIED = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "403"}
_OURS_UNLESS_NAMED = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EEXIST}
"""Errors a bug makes as readily as a user (a wrong path joined): the user's only on a path they named.
Permissions, a read-only file system and a full disk are the machine's, whichever path meets them."""
_OPTIONS = "--storage-options (a grid YAML's storage_options)"
_CREDENTIALS_FIX = (
    f"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or key and secret in {_OPTIONS}"
)


def one_line_errors(run: Callable[[], int], argv: Sequence[str], parsed: Callable[[], Namespace | None]) -> int:
    """``run()``, with a ``UsageError`` or an OS/storage error about the user's paths (``plain_message``)
    printed as one ``apiflow: error:`` line and exit 2; any other exception keeps its traceback.
    ``parsed`` gives ``argv`` as parsed once it is (the CLI parses inside ``run``)."""
    try:
        return run()
    except UsageError as exc:
        print(f"apiflow: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        message = plain_message(exc, argv, parsed())
        if message is None:
            raise
        print(f"apiflow: error: {message}", file=sys.stderr)
        return 2


def plain_message(
    exc: BaseException, argv: Sequence[str] = (), parsed: Namespace | None = None
) -> str | None:
    """One line naming the path or URL at fault and the fix, or None when ``exc`` is not the user's.

    Args:
        exc: What ended the command.
        argv: The command's arguments: a message names the argument (``--out X``) a failing path
            belongs to.
        parsed: ``argv`` as parsed, when it was: only a flag that holds a value names the path after
            it (``--dry-run X`` does not name X).

    Returns:
        The line (without the ``apiflow: error:`` prefix) for an OS error about a path (a file where
        a folder is needed, read-only, no space) or an object store's refusal (no credentials, no
        endpoint, access denied, no bucket); None for anything else, which is a bug.
    """
    value_flags = None
    if parsed is not None:
        value_flags = {
            f"--{k.replace('_', '-')}" for k, v in vars(parsed).items() if isinstance(v, str | list)
        }
    places = _places(argv, value_flags)
    for link in (exc, exc.__cause__, exc.__context__) if isinstance(exc, OSError) else (exc,):
        if link is not None and (message := _storage_message(link, places)):
            return _one_line(message)
    if isinstance(exc, OSError) and (message := _os_message(exc, places)):
        return _one_line(message)
    return None


class _Place:
    """One path or URL argument, with the flag that named it (None for a positional)."""

    def __init__(self, flag: str | None, value: str) -> None:
        self.flag = flag
        self.value = value

    def shown(self) -> str:
        return f"{self.flag} {self.value}" if self.flag else self.value

    def wanted(self, what: str) -> str:
        """``what`` for this argument: ``folder for --out``, or ``folder`` for a positional."""
        return f"{what} for {self.flag}" if self.flag else what


def _places(argv: Sequence[str], value_flags: Collection[str] | None) -> list[_Place]:
    places = []
    for i, token in enumerate(argv):
        if token.startswith("--") and "=" in token:
            name, _, value = token.partition("=")
            places.append(_Place(name, value))
        elif token and not token.startswith("-"):
            before = argv[i - 1] if i else ""
            takes = before.startswith("--") and "=" not in before
            flag = before if takes and (value_flags is None or before in value_flags) else None
            # A positional is a path when it looks like one (a verb such as ``run`` does not).
            if flag or "/" in token or "." in token or os.path.lexists(token):
                places.append(_Place(flag, token))
    return places


def _url(places: list[_Place]) -> _Place | None:
    return next((p for p in places if _REMOTE.match(p.value) and not p.value.startswith("file://")), None)


def _storage_message(exc: BaseException, places: list[_Place]) -> str | None:
    names = {f"{c.__module__}.{c.__name__}" for c in type(exc).__mro__}
    place = _url(places)
    where = place.shown() if place else "the object store"
    if names & _NO_CREDENTIALS:
        return f"{where}: no credentials: {_CREDENTIALS_FIX}"
    if names & _NO_CONNECTION:
        endpoint = _endpoint(str(getattr(exc, "kwargs", {}).get("endpoint_url") or ""))
        return (
            f"{where}: no endpoint reachable at {endpoint or 'its endpoint'}: check the network, and "
            f"client_kwargs.endpoint_url in {_OPTIONS} or AWS_ENDPOINT_URL"
        )
    if _CLIENT_ERROR in names:
        error = (getattr(exc, "response", None) or {}).get("Error", {})
        code, text = str(error.get("Code", "")), str(error.get("Message", ""))
        if code in _DENIED:
            return f"{where}: access denied ({code}): check the credentials and the bucket's permissions"
        if code == "NoSuchBucket":
            return f"{where}: no such bucket: create it or correct the URL"
        return f"{where}: the object store refused the request ({code or 'no code'}: {text or exc})"
    return None


def _endpoint(url: str) -> str:
    """``scheme://host[:port]`` of a request URL."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.split('/', 1)[0]}" if sep else url


def _os_message(exc: OSError, places: list[_Place]) -> str | None:
    path = _failing_path(exc, places)
    if path is None:
        return None
    place = _owner(path, places)
    if place is None and exc.errno in _OURS_UNLESS_NAMED:
        return None  # about a path the user never named: most likely a bug
    lead = place.shown() if place else path

    def wanted(what: str) -> str:
        return place.wanted(what) if place else what

    def part(where: str) -> str:
        # The part of the user's path at fault, when it is not the whole of it.
        return "" if _same(where, path if place is None else place.value) else f"{where} "

    code = exc.errno
    if code == errno.ENOTDIR:
        blocker = _blocking_file(path)
        return f"{lead}: {part(blocker)}is a file, not a folder: name a {wanted('folder')} instead"
    if code == errno.EEXIST:
        kind = "folder" if os.path.isdir(path) else "file"
        return f"{lead}: {part(path)}already exists as a {kind}: name a new {wanted('path')} or remove it"
    if code == errno.EISDIR:
        return f"{lead}: {part(path)}is a folder, not a file: name a {wanted('file')} instead"
    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
        existing = _existing(path)
        folder = existing if os.path.isdir(existing) else os.path.dirname(existing)
        if code == errno.EROFS or not os.access(folder, os.W_OK | os.X_OK):
            return f"{lead}: {part(folder)}is read-only: choose a writable {wanted('folder')}"
        return f"{lead}: {part(existing)}permission denied: fix its permissions or choose another {wanted('path')}"
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return f"{lead}: no space left on the device (or over quota): free some or choose another {wanted('path')}"
    if code == errno.ENAMETOOLONG:
        return f"{lead}: a name in the path is too long: choose a shorter {wanted('path')}"
    if code == errno.ENOENT:
        return f"{lead}: {part(path)}no such file or folder"
    return None


def _failing_path(exc: OSError, places: list[_Place]) -> str | None:
    """The local path ``exc`` is about: its ``filename``, else a path argument its text names."""
    if isinstance(exc.filename, str | bytes | os.PathLike):
        return os.fsdecode(exc.filename)
    text = str(exc)
    for place in places:
        if "://" not in place.value and (f"'{place.value}'" in text or os.path.abspath(place.value) in text):
            return place.value
    return None


def _owner(path: str, places: list[_Place]) -> _Place | None:
    """The path argument ``path`` lies on (itself, below it, or one of its parents)."""
    full = os.path.abspath(path)
    for place in places:
        if "://" in place.value:
            continue
        mine = os.path.abspath(place.value)
        if full == mine or full.startswith(mine + os.sep) or mine.startswith(full + os.sep):
            return place
    return None


def _same(a: str, b: str) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _existing(path: str) -> str:
    """``path`` itself if it exists, else its nearest existing parent."""
    current = Path(path)
    while not current.exists() and current != current.parent:
        current = current.parent
    return str(current)


def _blocking_file(path: str) -> str:
    """The file (not folder) among ``path`` and its parents that keeps ``path`` from being a folder."""
    current = Path(path)
    while current != current.parent:
        if current.exists() and not current.is_dir():
            return str(current)
        current = current.parent
    return path


def _one_line(text: str) -> str:
    return " ".join(text.split())
