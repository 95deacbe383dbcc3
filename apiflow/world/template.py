"""Render response templates from request features: a closed, data-only vocabulary.

- ``"{{expr}}"`` alone is replaced by the typed value of ``expr``; inside a longer
  string it is interpolated as text. ``expr`` is a feature name (``path.plan_id``,
  ``state.plan.status``) optionally followed by ``?? <json literal>`` as a default.
- Objects with a single ``$``-key are directives: ``$int``, ``$str``, ``$len``,
  ``$min``, ``$max``, ``$add``, ``$slice`` (``{of, offset, limit, max}``: offset/limit
  pagination with a silent clamp), ``$json`` (compact JSON text of a value).
"""

from __future__ import annotations

import json
import re
from typing import Any

from apiflow.world.features import Features
from apiflow.world.state import MISSING

_WHOLE = re.compile(r"^\{\{\s*(.+?)\s*\}\}$")
_INNER = re.compile(r"\{\{\s*(.+?)\s*\}\}")


def _eval_expr(expr: str, features: Features) -> Any:
    name, sep, default = expr.partition("??")
    value = features.lookup(name.strip())
    if value is MISSING:
        if sep:
            return json.loads(default.strip())
        return None
    return value


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _directive(name: str, arg: Any, features: Features) -> Any:
    value = render(arg, features)
    if name == "$int":
        return _as_int(value)
    if name == "$str":
        return "" if value is None else str(value)
    if name == "$len":
        return len(value) if isinstance(value, list | dict | str) else 0
    if name == "$min":
        return min(_as_int(v) for v in value)
    if name == "$max":
        return max(_as_int(v) for v in value)
    if name == "$add":
        return sum(_as_int(v) for v in value)
    if name == "$json":
        return json.dumps(value)
    if name == "$slice":
        items = value.get("of") or []
        offset = max(0, _as_int(value.get("offset", 0)))
        limit = _as_int(value.get("limit", len(items)))
        cap = value.get("max")
        if cap is not None:
            limit = min(limit, int(cap))
        return items[offset : offset + max(0, limit)]
    raise ValueError(f"unknown template directive {name!r}")


def render(template: Any, features: Features) -> Any:
    """A copy of ``template`` with every expression and directive evaluated."""
    if isinstance(template, str):
        if "{{" not in template:
            return template
        whole = _WHOLE.match(template)
        if whole:
            return _eval_expr(whole.group(1), features)
        return _INNER.sub(lambda m: _text(_eval_expr(m.group(1), features)), template)
    if isinstance(template, dict):
        if len(template) == 1:
            (key, arg), = template.items()
            if key.startswith("$"):
                return _directive(key, arg, features)
        return {k: render(v, features) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, features) for v in template]
    return template


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value)


KNOWN_DIRECTIVES = ("$int", "$str", "$len", "$min", "$max", "$add", "$json", "$slice")
