"""Small HTML building blocks shared by every viewer page.

Every string that comes from a trial record (model output, tool results, task text, even model
and task ids) is untrusted: it reaches a page only through ``esc`` (text and attribute values
alike), and each page carries a Content-Security-Policy that allows no inline script, so a
markup slip would be blocked by the browser as well (docs/design/083-viewer.md).
"""

from __future__ import annotations

import hashlib
import html
import math
import re
from collections.abc import Iterable
from typing import Any

import orjson

CSP = (
    "default-src 'none'; script-src 'self' file:; style-src 'self' file:; img-src 'self' file:; "
    "base-uri 'none'; form-action 'none'"
)
"""No inline script or style, no network: only the site's own viewer.js / viewer.css load."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def esc(value: Any) -> str:
    """Text or attribute value, HTML-escaped (quotes included); ``None`` is the empty string."""
    return "" if value is None else html.escape(str(value), quote=True)


def esc_text(value: Any) -> str:
    """Element content only (never an attribute): ``&``, ``<`` and ``>`` escaped, quotes kept.

    Transcripts are mostly JSON; leaving its quotes raw inside ``<pre>`` keeps pages ~15 % smaller.
    """
    return html.escape(str(value), quote=False)


def token(text: str) -> str:
    """A short, path-safe, collision-free file name stem for any id (ids are untrusted)."""
    readable = _UNSAFE.sub("_", text)[:60]
    return f"{readable}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def pretty(value: Any) -> str:
    """A JSON value as indented text (strings that hold JSON are shown parsed).

    orjson, not ``json``: the pure-Python indenting encoder was most of a build's time.
    """
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        if isinstance(value, str):
            return value
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # not JSON-serialisable (an integer beyond 64 bits): show it as Python prints it
        return repr(value)


def usd(value: float | None) -> str:
    """A cost in dollars; '—' when unknown."""
    if value is None or math.isnan(value):
        return "—"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def percent(part: int, whole: int) -> str:
    """``part/whole`` as a percentage; '—' for an empty whole."""
    return f"{100 * part / whole:.1f} %" if whole else "—"


def status_badge(status: str) -> str:
    """A coloured pass / fail / unscored / harness label."""
    return f'<span class="badge s-{esc(status)}">{esc(status)}</span>'


def mark(ok: bool) -> str:
    """A green tick or a red cross."""
    return '<span class="ok">✓</span>' if ok else '<span class="no">✗</span>'


def table(headers: Iterable[str], rows: Iterable[str], *, attrs: str = "") -> str:
    """A table with the given header cells and already-rendered ``<tr>`` rows."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def cells(*values: str) -> str:
    """Already-rendered cell contents joined as ``<td>`` elements."""
    return "".join(f"<td>{v}</td>" for v in values)


def page(title: str, body: str, *, depth: int, crumbs: list[tuple[str, str]] | None = None) -> str:
    """A complete page. ``depth`` is how many folders below the site root it lives (for asset links).

    ``crumbs`` are ``(href, label)`` pairs for the breadcrumb trail; the last one is the page itself.
    """
    up = "../" * depth
    trail = ""
    if crumbs:
        links = [f'<a href="{esc(href)}">{esc(label)}</a>' for href, label in crumbs[:-1]]
        trail = f'<nav class="crumbs">{" › ".join([*links, esc(crumbs[-1][1])])}</nav>'
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title>"
        f'<link rel="stylesheet" href="{up}viewer.css"><script src="{up}viewer.js" defer></script>'
        f"</head><body>{trail}<h1>{esc(title)}</h1>\n{body}\n</body></html>\n"
    )
