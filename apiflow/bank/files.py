"""Bank files are untrusted data: their names, sizes and YAML shape are checked before use.

A third-party bank must not be able to hang, exhaust or escape the harness
(docs/design/061-untrusted-banks.md). Every cap is a named constant with real headroom over
``bank/v1`` (figures beside each), and every refusal is one line naming the file and the cap.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from apiflow.errors import UsageError

MAX_FILE_BYTES = 4 * 1024 * 1024
"""Bytes per bank file (bank/v1: 292 KB validation.json, 71 KB largest world, 5 KB largest task)."""
MAX_BANK_BYTES = 64 * 1024 * 1024
"""Bytes over all of a bank's data files (bank/v1: 2.4 MB)."""
MAX_BANK_FILES = 20_000
"""Data files in a bank, and entries in its manifest (bank/v1: 482)."""
MAX_NAME_LENGTH = 255
"""Characters in a file's path relative to the bank (bank/v1: 26)."""
MAX_YAML_DEPTH = 64
"""Nesting of mappings and sequences in one file (bank/v1: 12)."""
MAX_YAML_NODES = 250_000
"""Nodes in one file with every alias expanded: the alias-bomb cap (bank/v1: 6,278)."""
MAX_STRING_LENGTH = 65_536
"""Characters in one YAML scalar (bank/v1: 1,921)."""
MAX_WORLDS = 1_000
"""Worlds in a bank (bank/v1: 13)."""
MAX_TASKS = 20_000
"""Tasks in a bank, solo subtasks and chains together (bank/v1: 467)."""
MAX_ROUTES_PER_WORLD = 1_000
"""Routes in one world (bank/v1: 62)."""
MAX_RULES_PER_ROUTE = 256
"""Rules in one route's table (bank/v1: 16)."""

_DRIVE = re.compile(r"^[A-Za-z]:")


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def shown(name: object) -> str:
    """A file name or key as it may be printed: as is when printable, else its repr."""
    text = str(name)
    return text if text.isprintable() and len(text) <= 200 else repr(text[:200])


def refusal(where: object, message: str) -> UsageError:
    """The one-line error refusing a bank file (``where`` names it)."""
    return UsageError(one_line(f"{shown(where)}: {message}"))


def name_problem(rel: object, suffixes: tuple[str, ...]) -> str | None:
    """Why ``rel`` cannot name a file of a bank (None when it can).

    Checked on the name alone, before anything is opened: a manifest is as untrusted as the files.
    """
    if not isinstance(rel, str) or not rel:
        return "a file name must be a non-empty string"
    if len(rel) > MAX_NAME_LENGTH:
        return f"file name longer than MAX_NAME_LENGTH={MAX_NAME_LENGTH}"
    if "\x00" in rel:
        return "file name holds a NUL byte"
    if "\\" in rel:
        return "file name holds a backslash (bank paths are posix)"
    if not rel.isprintable():
        return "file name holds a control character"
    if rel.startswith("/"):
        return "absolute file name (must be relative to the bank)"
    if _DRIVE.match(rel):
        return "file name starts with a drive letter"
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "file name has an empty, '.' or '..' segment (path traversal)"
    if any(part.startswith(".") for part in parts):
        return "file name has a hidden segment"
    if not rel.endswith(suffixes):
        return f"not a data file ({', '.join(suffixes)})"
    return None


def resolved_inside(root: Path, rel: str) -> Path | None:
    """``root / rel`` when it resolves inside the bank (symlinks followed), else None."""
    path = root / rel
    try:
        target = path.resolve()
        base = root.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return None
    return path if target.is_relative_to(base) else None


def read_capped(path: Path, cap: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, refused when larger than ``cap`` (never read beyond it).

    Opened without blocking and checked with ``fstat``: a FIFO or device under a bank's name
    would otherwise hang the open or the read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise refusal(path, f"cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise refusal(path, "is not a regular file")
        if info.st_size > cap:
            raise refusal(path, f"{info.st_size} bytes exceeds MAX_FILE_BYTES={cap}")
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise refusal(path, f"more than MAX_FILE_BYTES={cap} bytes")
    return data


def _not_json(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    # A bank is JSON-shaped data: a date, set or binary blob would reach world state and records
    # as a Python object no JSON encoder takes.
    raise yaml.constructor.ConstructorError(
        None, None, f"YAML tag {node.tag} is not JSON data (quote the value)", node.start_mark
    )


class BankYamlLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """libyaml's safe loader (no Python tags) that also refuses the non-JSON YAML types."""


for _tag in ("timestamp", "binary", "set", "omap", "pairs"):
    BankYamlLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_json)


def _check_shape(text: str, where: Path) -> None:
    """Depth, expanded size and scalar length from the event stream, before anything is built.

    Events come one at a time, so a refusal costs only the prefix read so far; building first
    would recurse once per nesting level in C (a 100,000-deep file crashed the interpreter) and
    share aliased subtrees that every later walk then expands (a "billion laughs" file).
    """
    depth = 0
    nodes = 0
    open_anchors: list[tuple[str | None, int]] = []
    sizes: dict[str, int] = {}
    event: Any
    for event in yaml.parse(text, Loader=BankYamlLoader):
        kind = type(event)
        if kind is yaml.ScalarEvent:
            nodes += 1
            if len(event.value) > MAX_STRING_LENGTH:
                raise refusal(where, f"a string of {len(event.value)} characters exceeds MAX_STRING_LENGTH="
                              f"{MAX_STRING_LENGTH} (line {event.start_mark.line + 1})")
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            nodes += 1
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise refusal(where, f"nesting deeper than MAX_YAML_DEPTH={MAX_YAML_DEPTH} "
                              f"(line {event.start_mark.line + 1})")
            open_anchors.append((event.anchor, nodes))
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            depth -= 1
            anchor, started = open_anchors.pop()
            if anchor is not None:
                sizes[anchor] = nodes - started + 1
        elif kind is yaml.AliasEvent:
            if event.anchor not in sizes:
                if any(event.anchor == anchor for anchor, _ in open_anchors):
                    raise refusal(where, f"alias *{shown(event.anchor)} refers to its own enclosing node "
                                  "(recursive data)")
                continue  # an undefined alias: the loader reports it
            nodes += sizes[event.anchor]
        else:
            continue
        if nodes > MAX_YAML_NODES:
            raise refusal(where, f"more than MAX_YAML_NODES={MAX_YAML_NODES} nodes with aliases expanded "
                          f"(line {event.start_mark.line + 1})")


def load_yaml(data: bytes, where: Path) -> Any:
    """Parse one bank YAML file's bytes (already size-capped) into JSON-shaped data.

    Raises:
        UsageError: Not UTF-8, not YAML, a cap exceeded, or a non-JSON type; one line.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refusal(where, f"not UTF-8 text (byte {exc.start})") from None
    try:
        _check_shape(text, where)
        return yaml.load(text, Loader=BankYamlLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise refusal(where, f"not valid YAML/JSON ({exc})") from None
