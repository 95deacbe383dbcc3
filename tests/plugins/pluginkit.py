"""Installs throwaway plug-in distributions for a test: a module plus a ``.dist-info`` on ``sys.path``.

``importlib.metadata`` finds a distribution by its ``*.dist-info`` folder on ``sys.path``, exactly
as pip leaves it, so the registry sees these as installed packages; nothing touches the venv.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from apiflow.models import plugins

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "apiflow-example-agent"


def forget_plugins() -> None:
    """Drop the registry's per-process caches (the entry-point table is read once)."""
    plugins._entry_points.cache_clear()
    plugins.load_plugin.cache_clear()


def write_dist(root: Path, dist: str, module: str, source: str, entry_points: dict[str, str]) -> None:
    """A distribution ``dist`` 0.1 with ``module`` (its code ``source``) and ``apiflow.models`` entry points."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = root / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{plugins.GROUP}]\n{lines}", encoding="utf-8")


@contextmanager
def on_path(root: Path) -> Iterator[None]:
    """``root`` on ``sys.path`` (and the registry's caches fresh) for the duration."""
    sys.path.insert(0, str(root))
    forget_plugins()
    try:
        yield
    finally:
        sys.path.remove(str(root))
        for name in [
            m for m, mod in sys.modules.items() if str(root) in str(getattr(mod, "__file__", "") or "")
        ]:
            del sys.modules[name]
        forget_plugins()
