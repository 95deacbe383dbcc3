"""The shipped banks and configs, found by name or by path, in a clone or in an installed wheel.

A clone keeps ``bank/`` and ``configs/`` at its top and runs on them (an edit shows at once); a
wheel carries the same two trees as package data under ``apiflow/_data/`` (``setup.py`` copies
them at build time), so ``pip install apiflow`` runs from any folder. A command takes either a
path (``--bank ./my-bank``) or the name of a shipped file (``--bank v1``, a grid's
``price_table: 2027-01``); a path that exists always wins over a name.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path, PurePosixPath

from apiflow.errors import UsageError

_CHECKOUT = Path(__file__).resolve().parents[1]
SHIPPED_TREES = ("bank", "configs")
"""The repository's top-level folders a wheel carries (setup.py copies exactly these)."""

KINDS: dict[str, tuple[str, str, str]] = {
    "bank": ("bank", "", "bank"),
    "grid": ("configs/grids", ".yaml", "grid"),
    "prices": ("configs/prices", ".yaml", "price table"),
    "ratelimits": ("configs/ratelimits", ".yaml", "rate limits table"),
}
"""Each kind of shipped file: its folder under the data root, its name's suffix, what a message calls it."""


def data_root() -> Path:
    """Where ``bank/`` and ``configs/`` are: this clone's top, else the installed package's data.

    The clone is tried first so a developer's edits to a bank or a price table are what runs; an
    installed apiflow has no such neighbours (its parent is ``site-packages``).
    """
    if all((_CHECKOUT / tree).is_dir() for tree in SHIPPED_TREES) and (_CHECKOUT / "pyproject.toml").is_file():
        return _CHECKOUT
    # A wheel installs to disk, so the package's files are a real folder (zipped installs unsupported).
    return Path(str(resources.files("apiflow").joinpath("_data")))


def shipped(relative: str) -> Path:
    """A shipped file by its repository path (``configs/panels/x.json``); not checked to exist."""
    return data_root() / relative


def known(kind: str) -> list[str]:
    """The names of the shipped files of ``kind`` (``bank``: ``sample``, ``v1``; ``prices``: versions)."""
    folder, suffix, _ = KINDS[kind]
    root = data_root() / folder
    if not root.is_dir():
        return []
    if kind == "bank":  # a bank is a folder with a manifest; its audit JSON beside it is not one
        return sorted(p.name for p in root.iterdir() if (p / "manifest.json").is_file())
    return sorted(p.name.removesuffix(suffix) for p in root.iterdir() if p.name.endswith(suffix))


def resolve(kind: str, value: str | Path) -> Path:
    """The file ``value`` means: an existing path as given, else a shipped file of ``kind``.

    A shipped file goes by its name (``v1``, ``2027-01``, ``demo``) or by its path in the
    repository (``bank/sample``, ``configs/prices/2027-01.yaml``: what grid files say), so the
    same grid runs in a clone and from an installed wheel in any folder.

    Raises:
        UsageError: ``value`` is neither an existing path nor a shipped name (one line, naming them).
    """
    given = Path(value)
    if given.exists():
        return given
    folder, suffix, what = KINDS[kind]
    text = str(value)
    candidates = []
    if text and "/" not in text and "\\" not in text:
        candidates.append(shipped(f"{folder}/{text}{'' if text.endswith(suffix) else suffix}"))
    relative = PurePosixPath(text)
    if not relative.is_absolute() and ".." not in relative.parts and str(relative).startswith(f"{folder}/"):
        candidates.append(shipped(str(relative)))
    for candidate in candidates:
        if candidate.exists():
            return candidate
    names = ", ".join(known(kind)) or "none found"
    raise UsageError(f"cannot read {what} {text}: it does not exist (neither a path nor a shipped {what}: {names})")
