"""Render response templates from request features: a closed, data-only vocabulary.

- ``"{{expr}}"`` alone is replaced by the typed value of ``expr``; inside a longer
  string it is interpolated as text. ``expr`` is a feature name (``path.plan_id``,
  ``state.plan.status``) optionally followed by ``?? <json literal>`` as a default.
- Objects with a single ``$``-key are directives: ``$int``, ``$str``, ``$len``,
  ``$min``, ``$max``, ``$add``, ``$slice`` (``{of, offset, limit, max}``: offset/limit
  pagination with a silent clamp), ``$json`` (compact JSON text of a value).

A template is compiled once into an ``Evaluator`` (``compile_template``) and then evaluated per
request. Subtrees without expressions or directives compile to constants that return the
template's own object: response bodies are large and mostly static, and nothing downstream
mutates them (state updates copy along their path, tools and grading only read).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from apiflow.world.features import Address, Features, address_of, getter_of
from apiflow.world.jsontext import dumps
from apiflow.world.patterns import linear_regex
from apiflow.world.state import MISSING

Evaluator = Callable[[Features], Any]

# RE2, not re: these scan bank text, and with backtracking a long run of "{{" (or of spaces) with
# no closing "}}" took time quadratic in its length (docs/results/issue24-house.md, "Figures moved
# out of code comments"). `\n?$` is Python's `$`.
_WHOLE = linear_regex(r"^\{\{\s*(.+?)\s*\}\}\n?$")
_INNER = linear_regex(r"\{\{\s*(.+?)\s*\}\}")


class Constant:
    """A subtree with nothing to evaluate: returned as is, never copied."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, features: Features) -> Any:
        return self.value


def _compile_expr(expr: str) -> Evaluator:
    name, sep, default = expr.partition("??")
    address: Address = address_of(name.strip())
    read = getter_of(address)
    default_text = default.strip()

    def evaluate(features: Features) -> Any:
        value = read(features)
        if value is MISSING:
            # Parsed per use, as written: a bad literal fails when it is needed, not at load.
            return json.loads(default_text) if sep else None
        return value

    return evaluate


def _compile_text(template: str) -> Evaluator:
    # re.split with one group alternates literal text and expressions: [text, expr, text, ...].
    pieces = _INNER.split(template)
    parts: list[str | Evaluator] = [
        piece if i % 2 == 0 else _compile_expr(piece) for i, piece in enumerate(pieces)
    ]

    def evaluate(features: Features) -> str:
        return "".join(p if isinstance(p, str) else _text(p(features)) for p in parts)

    return evaluate


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _slice(value: Any) -> Any:
    items = value.get("of") or []
    offset = max(0, _as_int(value.get("offset", 0)))
    limit = _as_int(value.get("limit", len(items)))
    cap = value.get("max")
    if cap is not None:
        limit = min(limit, int(cap))
    return items[offset : offset + max(0, limit)]


# Each directive applied to its (already rendered) argument.
_DIRECTIVES: dict[str, Callable[[Any], Any]] = {
    "$int": _as_int,
    "$str": lambda value: "" if value is None else str(value),
    "$len": lambda value: len(value) if isinstance(value, list | dict | str) else 0,
    "$min": lambda value: min(_as_int(v) for v in value),
    "$max": lambda value: max(_as_int(v) for v in value),
    "$add": lambda value: sum(_as_int(v) for v in value),
    "$json": dumps,
    "$slice": _slice,
}


def _compile_directive(name: str, arg: Any) -> Evaluator:
    argument = compile_template(arg)
    directive = _DIRECTIVES.get(name)
    if directive is None:

        def unknown(features: Features) -> Any:
            argument(features)  # rendered first, as before: its own errors come first
            raise ValueError(f"unknown template directive {name!r}")

        return unknown
    return lambda features: directive(argument(features))


def _compile_dict(template: dict[str, Any]) -> Evaluator:
    if len(template) == 1:
        ((key, arg),) = template.items()
        if key.startswith("$"):
            return _compile_directive(key, arg)
    items = [(k, compile_template(v)) for k, v in template.items()]
    if all(isinstance(ev, Constant) for _, ev in items):
        return Constant(template)
    # Each key with its constant value, or with None and the evaluator of a templated one: a
    # constant is taken as it is, without its call, and the object is built by a loop (a
    # comprehension is a call of its own on Python 3.11). Keys keep the template's order.
    parts = [(k, ev.value, None) if isinstance(ev, Constant) else (k, None, ev) for k, ev in items]

    def evaluate(features: Features) -> dict[str, Any]:
        out = {}
        for key, value, evaluator in parts:
            out[key] = value if evaluator is None else evaluator(features)
        return out

    return evaluate


def _compile_list(template: list[Any]) -> Evaluator:
    items = [compile_template(v) for v in template]
    if all(isinstance(ev, Constant) for ev in items):
        return Constant(template)
    return lambda features: [ev(features) for ev in items]


def compile_template(template: Any) -> Evaluator:
    """An evaluator of ``template``; compiling never fails, evaluation raises what rendering would."""
    if isinstance(template, str):
        if "{{" not in template:
            return Constant(template)
        whole = _WHOLE.match(template)
        return _compile_expr(whole.group(1)) if whole else _compile_text(template)
    if isinstance(template, dict):
        return _compile_dict(template)
    if isinstance(template, list):
        return _compile_list(template)
    return Constant(template)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return dumps(value)
