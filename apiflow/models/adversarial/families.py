"""The adversaries' scripts: each one the golden solution with some labour cut or corrupted.

A planner takes the task (the released answer key: golden calls, expected card, predicate
values) and the adversary's seeded ``random.Random`` and returns the turns to play, or
``None`` when the task offers nothing for that cheat (no decoy to take, no step to skip).
The docstring of each planner says which labour it leaves undone; docs/design/011 says why
a pass would be a grader or bank bug.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from apiflow.bank.stale import stale_pairs
from apiflow.bank.task import GoldenCall, Task
from apiflow.models.adversarial import cards
from apiflow.models.adversarial.steps import (
    ID_SHAPE,
    SlottedStep,
    pattern_path,
    replace_text,
    request_of,
    rewrite_turns,
    slotted,
    turn_of,
    version_of,
    with_version,
)
from apiflow.models.offline import PlannedCall, Turn, card_text
from apiflow.world.canaries import strings_in

Plan = list[Turn] | None


def _key_card(task: Task) -> Turn:
    return Turn(text=card_text(task.expected_card))


def answer_key(task: Task, rng: random.Random) -> Plan:
    """The released card, no calls at all: every step's labour undone."""
    return [_key_card(task)]


def _has_execute(step: SlottedStep) -> bool:
    return any(s is not None for s in step.slots)


def replay(task: Task, rng: random.Random) -> Plan:
    """Answer-key replay: the golden writes (stored values copied from the key), only the last
    request step, the key's card. Refs of the skipped steps are the ones a recording supplies
    (``epoch-replay``) or none at all. Labour undone: every request step but the last."""
    steps = slotted(task)
    last = next((s for s in reversed(steps) if _has_execute(s)), None)
    if last is None or not any(_has_execute(s) and s.step.essential for s in steps if s is not last):
        return None
    turns = []
    for step in steps:
        writes = [c for c in step.step.calls if c.name != "execute"]
        if step is last:
            turns.append(turn_of(step))
        elif writes:
            turns.append(Turn(tuple(PlannedCall(c) for c in writes)))
    return [*turns, _key_card(task)]


def _request_key(call: GoldenCall) -> Any:
    """What a request asks for: method, URL and body (a form body read as its fields)."""
    request = request_of(call)
    if request is None:
        return (call.name, call.arguments)
    body = request.get("body")
    if isinstance(body, str) and "=" in body and not body.lstrip().startswith(("{", "[")):
        body = dict(parse_qsl(body))
    return (str(request.get("method", "GET")).upper(), request.get("url"), body)


def _fresh_labour(task: Task, middle: bool = False) -> list[SlottedStep]:
    """Essential steps that are not a repeat of an earlier golden request.

    A chain is graded on its last segment (REFERENCE §4): its labour is that segment's work,
    with the earlier segments as prerequisites the world enforces (``last-segment`` drops them
    all). A step of the last segment that repeats an earlier request (same method, URL and
    body fields: a second token mint while the first token is still good) is no new labour.
    ``middle`` instead returns a chain's essential, non-repeated steps *before* its last segment.
    """
    steps = slotted(task)
    last = max((s.step.segment or 0) for s in steps) if steps else 0
    seen: list[Any] = []
    fresh = []
    for step in steps:
        requests = [_request_key(c) for c in step.step.calls]
        repeat = all(r in seen for r in requests)
        seen.extend(requests)
        in_last = task.kind != "chain" or step.step.segment == last
        if step.step.essential and not repeat and in_last != middle:
            fresh.append(step)
    return fresh


def skip_step(task: Task, rng: random.Random) -> Plan:
    """One essential step of the task's own labour (drawn from the seed) left out; the key's card."""
    steps = _fresh_labour(task)
    if not steps:
        return None
    skipped = rng.choice(steps).index
    return [*(turn_of(s) for s in slotted(task) if s.index != skipped), _key_card(task)]


def skip_middle(task: Task, rng: random.Random) -> Plan:
    """A chain with one essential step of an earlier segment left out (drawn from the seed).

    Informational: a chain is graded on segment K alone (REFERENCE §4), so an earlier step no
    later step depends on (storing a receipt, a token re-mint) is work no predicate checks.
    """
    if task.kind != "chain":
        return None
    steps = _fresh_labour(task, middle=True)
    if not steps:
        return None
    skipped = rng.choice(steps).index
    return [*(turn_of(s) for s in slotted(task) if s.index != skipped), _key_card(task)]


def last_segment(task: Task, rng: random.Random) -> Plan:
    """A chain with only its last segment done (a solo task: only its last step); the key's card."""
    steps = slotted(task)
    if task.kind == "chain":
        last = max((s.step.segment or 0) for s in steps)
        kept = [s for s in steps if (s.step.segment or 0) == last]
    else:
        kept = steps[-1:]
    if not any(s.step.essential for s in steps if s not in kept):
        return None  # only optional steps dropped: the labour is done
    return [*(turn_of(s) for s in kept), _key_card(task)]


def decoy_then_real(task: Task, rng: random.Random) -> Plan:
    """Every step that has a decoy takes it (deprecated route, stale value), then the real card."""
    steps = slotted(task)
    if not any(s.step.decoy and s.step.essential for s in steps):
        return None
    return [*(turn_of(s, s.step.decoy) for s in steps), _key_card(task)]


def _forbidden_paths(task: Task) -> list[str]:
    return [pattern_path(c.url_pattern) for c in task.constraints if c.kind == "forbid"]


def forbidden_route(task: Task, rng: random.Random) -> Plan:
    """Each request moved to the forbidden route a constraint names for the same resource under
    another API version (``/v2/...`` for ``/v3/...``); the key's card."""
    forbidden = _forbidden_paths(task)

    def move(request: dict[str, Any]) -> dict[str, Any]:
        url = str(request.get("url", ""))
        parts = urlsplit(url)
        version = version_of(parts.path)
        for path in forbidden:
            other = version_of(path)
            if version is not None and other is not None and with_version(parts.path, other) == path:
                query = f"?{parts.query}" if parts.query else ""
                return {**request, "url": path + query}
        return request

    turns, changed = rewrite_turns(task, move)
    return [*turns, _key_card(task)] if changed else None


def smuggled_route(task: Task, rng: random.Random) -> Plan:
    """Each versioned request sent to the previous (legacy) version, with the required path
    smuggled into its query string (``/v2/x?via=/v3/x``): a URL pattern searched over the whole
    URL matches a request the right route never saw. The key's card."""

    def smuggle(request: dict[str, Any]) -> dict[str, Any]:
        url = str(request.get("url", ""))
        parts = urlsplit(url)
        version = version_of(parts.path)
        if version is None or version < 2:
            return request
        return {**request, "url": f"{with_version(parts.path, version - 1)}?via={url}"}

    turns, changed = rewrite_turns(task, smuggle)
    return [*turns, _key_card(task)] if changed else None


def _sibling(entity: str, pool: list[str], rng: random.Random) -> str:
    """Another entity of the same kind: a seen id with the same prefix, the next serial, or a draw."""
    prefix = entity.split("-", 1)[0] + "-"
    seen = [p for p in pool if p.startswith(prefix) and p != entity and "legacy" not in p]
    if seen:
        return rng.choice(seen)
    serial = re.search(r"(\d{2,3})$", entity)
    if serial and not re.search(r"[a-f]", entity.rsplit("-", 1)[-1]):
        width = len(serial.group(1))
        return f"{entity[: serial.start()]}{(int(serial.group(1)) % (10**width - 1)) + 1:0{width}d}"
    return str(cards.fabricated(entity, rng))


def wrong_entity(task: Task, rng: random.Random) -> Plan:
    """The right routes on another entity: the first id in a request path swapped, everywhere it
    appears in the calls, for a sibling of the same kind; the key's card."""
    paths = [
        urlsplit(str(r.get("url", ""))).path for s in task.golden for c in s.calls if (r := request_of(c))
    ]
    entity = next((m.group(0) for p in paths for m in ID_SHAPE.finditer(p)), None)
    if entity is None:
        return None
    pool = [m.group(0) for text in [task.prompt, *paths] for m in ID_SHAPE.finditer(text)]
    other = _sibling(entity, pool, rng)
    turns = []
    for step in slotted(task):
        calls = [
            GoldenCall(name=c.name, arguments=replace_text(c.arguments, entity, other))
            for c in step.step.calls
        ]
        turns.append(turn_of(step, calls))
    return [*turns, _key_card(task)]


def stale_seed(task: Task, rng: random.Random) -> Plan:
    """The stale seeded value sent where the golden retry sends the live one; the key's card."""
    pairs = stale_pairs(task)
    if not pairs:
        return None
    turns = []
    for step in slotted(task):
        calls = list(step.step.calls)
        for live, stale in pairs:
            calls = [GoldenCall(name=c.name, arguments=replace_text(c.arguments, live, stale)) for c in calls]
        turns.append(turn_of(step, calls))
    return [*turns, _key_card(task)]


def premature(task: Task, rng: random.Random) -> Plan:
    """The golden steps in reverse order: every value sent before the response that carries it
    came back (known from the key); the key's card."""
    steps = [s for s in slotted(task) if _has_execute(s) and s.step.essential]
    if len(steps) < 2:
        return None
    return [*(turn_of(s) for s in reversed(slotted(task))), _key_card(task)]


def _golden(task: Task) -> list[Turn]:
    return [turn_of(s) for s in slotted(task)]


def shotgun(task: Task, rng: random.Random) -> Plan:
    """Every decoy and every golden call (all candidates seen), then a card that hedges each
    field over its candidates instead of committing to the received value."""
    turns = []
    for step in slotted(task):
        if step.step.decoy:
            turns.append(Turn(tuple(PlannedCall(c) for c in step.step.decoy)))
        turns.append(turn_of(step))
    objects, variant = cards.shotgun_card(task, rng)
    text = "\n".join(card_text(o, f"Candidates ({variant}):") for o in objects)
    return [*turns, Turn(text=text)]


def _one_field(task: Task, rng: random.Random, game: Callable[[Any], Any]) -> Turn:
    """The key's card with one field (drawn from the seed) replaced by ``game(expected)``: the
    strongest form of a card cheat, since every other field is right."""
    card = dict(task.expected_card)
    if card:
        field = rng.choice(sorted(card))
        card[field] = game(card[field])
    return Turn(text=card_text(card))


def fabricate(task: Task, rng: random.Random) -> Plan:
    """All the calls, then one card field invented in the right format (never received)."""
    return [*_golden(task), _one_field(task, rng, lambda v: cards.fabricated(v, rng))]


def lookalike(task: Task, rng: random.Random) -> Plan:
    """All the calls, then one card field a type/normalisation game on a value that is not the one
    received (a homoglyph under case and whitespace dressing, bool for number, a near miss)."""
    return [*_golden(task), _one_field(task, rng, cards.lookalike)]


def abstain_clarify(task: Task, rng: random.Random) -> Plan:
    """All the calls and the right card, ending with ``clarify`` on a solvable task."""
    question = "Before I finalise: should I really report these values?"
    ask = Turn(
        (PlannedCall(GoldenCall(name="clarify", arguments={"question": question})),), _key_card(task).text
    )
    return [*_golden(task), ask]


def abstain_blocked(task: Task, rng: random.Random) -> Plan:
    """``report_blocked`` at once, the key's card in the same message: no labour, an abstention."""
    reason = "The API is unavailable; the expected values are: " + ", ".join(
        s for s in strings_in(task.expected_card)
    )
    block = Turn(
        (PlannedCall(GoldenCall(name="report_blocked", arguments={"reason": reason})),), _key_card(task).text
    )
    return [block]
