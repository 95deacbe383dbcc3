"""Tool-call arguments: decode them, then check them against the tool's JSON schema.

The published harness (Inspect AI) decoded a JSON-string arguments object, then validated
it with a JSON Schema Draft 7 validator and reported every violation in one ``parsing``
error::

    Found 1 validation errors parsing tool input arguments:
    - Additional properties are not allowed ('headers', 'method', 'protocol', 'url' were unexpected)

We validate the same keywords our derived schemas use (``type``, ``anyOf``, ``properties``,
``required``, ``additionalProperties``) with the same message texts and the same error order
(schema keyword order), so a model sees the sentences it would have seen there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from apiflow.tools.limits import loads_bounded, preview, writable_text
from apiflow.tools.result import ArgumentError

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "string": (str,),
    "array": (list,),
    "boolean": (bool,),
    "null": (type(None),),
    "number": (int, float),
    "integer": (int,),
}


def decode_arguments(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    """Arguments as a dict; a string must hold a JSON object (blank means no arguments).

    Raises:
        ArgumentError: The string is not JSON or not a JSON object.
        LimitError: The string is over ``ARGUMENT_CHARS`` or nests deeper than ``ARGUMENT_DEPTH``.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        raise ArgumentError(_decode_message(preview(arguments), "the arguments must be a JSON object"))
    text = arguments.strip()
    if not text:
        return {}
    try:
        decoded = loads_bounded(text)
    except ValueError as exc:
        # Echoed whole, as published: ``loads_bounded`` refused anything over ARGUMENT_CHARS already.
        raise ArgumentError(_decode_message(writable_text(arguments), str(exc))) from None
    if not isinstance(decoded, dict):
        raise ArgumentError(_decode_message(writable_text(arguments), "the arguments must be a JSON object"))
    return decoded


def _decode_message(arguments: str, detail: str) -> str:
    return f"Error parsing the following tool call arguments:\n\n{arguments}\n\nError details: {detail}"


def _is_type(instance: Any, json_type: str) -> bool:
    # bool is an int in Python but not a JSON number.
    if isinstance(instance, bool) and json_type in ("number", "integer"):
        return False
    if json_type == "integer" and isinstance(instance, float):
        return instance.is_integer()
    return isinstance(instance, _JSON_TYPES[json_type])


def _errors(instance: Any, schema: dict[str, Any]) -> Iterator[str]:
    """Draft 7 messages for the keywords we use, in schema keyword order."""
    for keyword, value in schema.items():
        if keyword == "type":
            types = [value] if isinstance(value, str) else list(value)
            if not any(_is_type(instance, t) for t in types):
                yield f"{instance!r} is not of type {', '.join(repr(t) for t in types)}"
        elif keyword == "anyOf":
            if not any(next(_errors(instance, sub), None) is None for sub in value):
                yield f"{instance!r} is not valid under any of the given schemas"
        elif keyword == "properties" and isinstance(instance, dict):
            for name, subschema in value.items():
                if name in instance:
                    yield from _errors(instance[name], subschema)
        elif keyword == "required" and isinstance(instance, dict):
            for name in value:
                if name not in instance:
                    yield f"{name!r} is a required property"
        elif keyword == "additionalProperties" and value is False and isinstance(instance, dict):
            extras = sorted(k for k in instance if k not in schema.get("properties", {}))
            if extras:
                verb = "was" if len(extras) == 1 else "were"
                yield f"Additional properties are not allowed ({', '.join(repr(e) for e in extras)} {verb} unexpected)"


_FLAT_TYPES: dict[str, type] = {"object": dict, "string": str, "array": list, "boolean": bool, "null": type(None)}


@dataclass(frozen=True, slots=True)
class QuickCheck:
    """Admits the common valid call of a flat tool schema in one pass over the arguments.

    The general walk builds generators per keyword; nearly every call is valid, so a call is
    first matched against each property's accepted Python types. Admitting means the walk
    would find nothing; anything else (an unknown key, an unusual type) goes to the walk,
    which alone words the errors.
    """

    accepted: dict[str, tuple[type, ...]]
    required: tuple[str, ...]

    def admits(self, arguments: dict[str, Any]) -> bool:
        """True only when ``arguments`` is valid under the schema this check was built from."""
        accepted = self.accepted
        for name, value in arguments.items():
            types = accepted.get(name)
            if types is None or type(value) not in types:
                return False
        for name in self.required:  # a loop, not all(<genexpr>): this runs on every call
            if name not in arguments:
                return False
        return True


def _flat_types(prop: dict[str, Any]) -> tuple[type, ...] | None:
    """Exact Python types a property schema accepts, when it is one or an ``anyOf`` of plain types."""
    if not set(prop) <= {"type", "anyOf", "description"} or ("type" in prop) == ("anyOf" in prop):
        return None
    options = prop["anyOf"] if "anyOf" in prop else [{"type": prop["type"]}]
    if any(set(option) != {"type"} or option["type"] not in _FLAT_TYPES for option in options):
        return None
    return tuple(_FLAT_TYPES[option["type"]] for option in options)


def quick_check(schema: dict[str, Any]) -> QuickCheck | None:
    """A ``QuickCheck`` for a flat object schema with no additional properties, else None.

    Numbers are left to the walk (bool is an int in Python; an integral float is an integer).
    """
    if set(schema) != {"type", "properties", "required", "additionalProperties"}:
        return None
    if schema["type"] != "object" or schema["additionalProperties"] is not False:
        return None
    accepted = {name: _flat_types(prop) for name, prop in schema["properties"].items()}
    if any(types is None for types in accepted.values()):
        return None
    return QuickCheck(accepted, tuple(schema["required"]))  # type: ignore[arg-type]


def validate_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    """Check arguments against a tool's parameters schema.

    Raises:
        ArgumentError: ``Found N validation errors parsing tool input arguments:`` + one line per error.
    """
    errors = list(_errors(arguments, schema))
    if errors:
        lines = [f"Found {len(errors)} validation errors parsing tool input arguments:"]
        lines += [f"- {message}" for message in errors]
        raise ArgumentError("\n".join(lines))
