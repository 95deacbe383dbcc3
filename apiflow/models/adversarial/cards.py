"""Answer cards an adversary reports instead of the value it received.

Every function is deterministic from its inputs and the adversary's seeded ``random.Random``.
None of them returns the expected value itself, in any spelling the grader should accept:
a fabricated value is a fresh draw of the same shape, a look-alike differs by a character
that only *looks* the same, a shotgun never commits to one candidate.
"""

from __future__ import annotations

import random
from typing import Any

from apiflow.bank.task import Task
from apiflow.models.adversarial.steps import ID_SHAPE
from apiflow.world.canaries import strings_in

HOMOGLYPHS = {
    "a": "а", "c": "с", "e": "е", "o": "о", "p": "р", "x": "х", "y": "у", "i": "і", "s": "ѕ",
    "0": "О", "1": "l", "3": "З", "5": "Ѕ", "6": "б",
}  # fmt: skip
"""Latin letters and digits -> Cyrillic look-alikes (``str.isalnum`` keeps both, so only equality tells)."""

_HEX = "0123456789abcdef"


def _fresh_like(text: str, rng: random.Random) -> str:
    """A value of the same shape: hex stays hex, digits stay digits, letters stay letters."""
    out = []
    for ch in text:
        if ch.isdigit():
            out.append(rng.choice("0123456789"))
        elif ch in _HEX:
            out.append(rng.choice(_HEX))
        elif ch.isalpha():
            out.append(rng.choice("abcdefghijklmnopqrstuvwxyz"))
        else:
            out.append(ch)
    return "".join(out)


def fabricated(value: Any, rng: random.Random) -> Any:
    """A value of the right format the API never sent (ids keep their prefix)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        while True:
            guess: float = value * rng.uniform(0.5, 1.5) + rng.choice((-3, 3))
            guess = round(guess) if isinstance(value, int) else round(guess, 2)
            if abs(guess - value) > 0.011:
                return guess
    if isinstance(value, list):
        return [fabricated(item, rng) for item in value] or ["none"]
    text = str(value)
    match = ID_SHAPE.fullmatch(text)
    for _ in range(16):
        guess_text = (
            f"{match.group(1)}-{_fresh_like(match.group(2), rng)}" if match else _fresh_like(text, rng)
        )
        if _alnum(guess_text) != _alnum(text):
            return guess_text
    return f"{text}-{rng.randrange(10, 99)}"


def _alnum(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def lookalike(value: Any) -> Any:
    """A type/normalisation game on a value that is *not* the expected one.

    Strings: one character swapped for a homoglyph (or its fullwidth twin), the rest dressed
    in another case and padded with whitespace (case and whitespace alone would be the same
    value; so would a combining accent, which the comparator drops with the punctuation). Numbers:
    ``True``/``False`` for 1/0 (Python's bool-is-int), else a near miss just outside the
    tolerance as a padded string. Lists: every element so treated.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if value in (0, 1):
            return bool(value)
        return f"  {round(value + 0.011, 3)} "
    if isinstance(value, list):
        return [lookalike(item) for item in value]
    text = str(value)
    for i, ch in enumerate(text.lower()):
        if ch in HOMOGLYPHS:
            return f"  {text[:i].upper()}{HOMOGLYPHS[ch]}{text[i + 1 :].upper()} "
    for i, ch in enumerate(text):
        if ch.isascii() and ch.isalnum():  # no homoglyph: its fullwidth twin (U+FF01..)
            return f"  {text[:i].upper()}{chr(ord(ch) + 0xFEE0)}{text[i + 1 :].upper()} "
    return f" {text}х "  # no ASCII character at all: a trailing Cyrillic letter


def candidates(task: Task, field: str, expected: Any) -> list[Any]:
    """Every value a shotgun agent could have seen for ``field``: the expected one and its rivals.

    Rivals: same-prefix ids in the prompt, seed, golden calls and card; the legacy shape the
    decoys carry; for numbers the neighbours a confused agent reports.
    """
    if isinstance(expected, bool):
        return [expected, not expected]
    if isinstance(expected, int | float):
        return [expected, expected + 1, expected - 1, expected * 2]
    if isinstance(expected, list):
        return [*expected, "legacy", "none"]
    text = str(expected)
    match = ID_SHAPE.fullmatch(text)
    found = [text]
    if match:
        prefix = match.group(1) + "-"
        pool = [task.prompt, *strings_in([s.value for s in task.seed]), *strings_in(task.expected_card)]
        pool += [s for step in task.golden for call in step.calls for s in strings_in(call.arguments)]
        for chunk in pool:
            for hit in ID_SHAPE.finditer(chunk):
                if hit.group(0).startswith(prefix) and hit.group(0) not in found:
                    found.append(hit.group(0))
        found.append(f"{prefix}legacy-0001")
    else:
        found += [f"{text}-stale", "unknown"]
    return found


def shotgun_card(task: Task, rng: random.Random) -> tuple[list[dict[str, Any]], str]:
    """The key's card with one field hedged over its candidates; returns (objects, variant name).

    Variants: ``list`` (all candidates in a scalar field), ``concat`` (joined with ", "),
    ``map`` (candidate -> candidate), ``extra-keys`` (a rival in the field, the expected value
    under look-alike keys), ``objects`` (the expected value first, a rival restated last).
    A set field always gets the union of its candidates.
    """
    variant = rng.choice(("list", "concat", "map", "extra-keys", "objects"))
    card: dict[str, Any] = dict(task.expected_card)
    if not card:
        return [card], variant
    field = rng.choice(sorted(card))
    expected = card[field]
    pool = candidates(task, field, expected)
    rival = next((c for c in pool[1:] if c != expected), fabricated(expected, rng))
    if isinstance(expected, list):
        card[field] = [str(c) for c in pool]
    elif variant == "list":
        card[field] = pool
    elif variant == "concat":
        card[field] = ", ".join(str(c) for c in pool)
    elif variant == "map":
        card[field] = {str(c): c for c in pool}
    elif variant == "extra-keys":
        card.update({field: rival, f"{field}_alt": expected, field.upper(): expected, "candidates": pool})
    else:
        return [card, {field: rival}], variant
    return [card], variant
