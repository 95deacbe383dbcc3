"""The sample bank's golden scripts really work against its world (no tools, no agent)."""

from __future__ import annotations

import json

import pytest

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.world import HttpRequest, WorldSession, body_text

BANK = load_bank(DEFAULT_BANK)


def replay(task_id: str, *, skip_essential: int | None = None) -> list:
    task = BANK.task(task_id)
    session = WorldSession(BANK.world_of(task), seed=7, state_overrides=task.world_state)
    exchanges = []
    for index, step in enumerate(task.golden):
        if index == skip_essential:
            continue
        for call in step.calls:
            if call.name != "execute":
                continue
            req = call.arguments["request"]
            headers = {k.lower(): v for k, v in (req.get("headers") or {}).items()}
            response = session.send(HttpRequest(req["method"], req["url"], headers, req.get("body")))
            exchanges.append((step, response))
    return exchanges


@pytest.mark.parametrize("task_id", list(BANK.tasks))
def test_golden_reaches_every_expected_value(task_id: str) -> None:
    exchanges = replay(task_id)
    for step, response in exchanges:
        if step.essential:
            assert 200 <= response.status < 300, (step, response)
    text = " ".join(body_text(r.body) for _, r in exchanges)
    for field, expected in BANK.task(task_id).expected_card.items():
        needle = json.dumps(expected) if not isinstance(expected, str) else expected
        assert needle.strip('"') in text, f"{field}={expected!r} never appears in a golden response"
