"""Wording helpers: varied openers, request quotes and joins so tickets do not read alike."""

from __future__ import annotations

import json
import random
from typing import Any


def pick(rng: random.Random, *variants: str) -> str:
    """One of ``variants``."""
    return rng.choice(variants)


def quote_request(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> str:
    """A ``<request>…</request>`` block the way an engineer pastes a broken call."""
    lines = [f"{method} {path}"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if body is not None:
        lines.append(body if isinstance(body, str) else json.dumps(body))
    return "<request>" + "\n".join(lines) + "</request>"


def quote_json(value: Any) -> str:
    """Compact JSON for an error quoted inline."""
    return json.dumps(value, ensure_ascii=False)


def words(name: str) -> str:
    """``mite_load_pct`` -> ``mite load pct``."""
    return name.replace("_", " ").replace("-", " ")


def card_phrase(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


OPENERS = (
    "Picking this up from the on-call channel:",
    "Quick one before the stand-up:",
    "Ticket from the {team}:",
    "Escalated by the {team} this morning:",
    "Ran into this while prepping the release:",
    "Heads up, this is blocking the {team}:",
    "Follow-up from yesterday's incident review:",
    "Paging you because the {team} is stuck:",
    "Carry-over from last sprint:",
    "This came in overnight:",
    "Need a hand with an integration bug:",
    "From the {team} queue, priority high:",
    "Small fire, should be quick:",
    "Weekend handover note:",
    "Customer-facing, so please treat as urgent:",
    "Found while reviewing the dashboards:",
    "Flagged by the QA run:",
    "",
    "",
)


def opener(rng: random.Random, team: str) -> str:
    """A ticket opener (sometimes none)."""
    text = rng.choice(OPENERS).format(team=team)
    return text + " " if text else ""


def an(noun: str) -> str:
    """``a crew`` / ``an order`` (by the first letter's sound, good enough for our vocabulary)."""
    text = noun.replace("-", " ")
    return ("an " if text[:1].lower() in "aeio" else "a ") + text
