"""Solvability: an oracle attempts each task ten times in the scoring harness and must pass three.

Offline the oracle is the golden path with seeded benign variation — extra reads and
searches, independent calls reordered, equivalent argument encodings (JSON-string
arguments, absolute URLs, lower-case header names, JSON-text bodies), numbers reported
as strings — which also shows the grader is not brittle to harmless differences. Any
other ``--oracle-model`` id runs the real agent loop (``apiflow.runner.play_trial_sync``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from typing import Any

from apiflow.authoring.gates.harness import Call, card_message, golden_calls, run_script
from apiflow.authoring.gates.result import GateLog
from apiflow.bank.task import Task
from apiflow.world import WorldDef

ATTEMPTS = 10
REQUIRED = 3
OFFLINE_ORACLE = "apiflow/oracle"


def derive_rng(*parts: object) -> random.Random:
    """A stream derived from content by sha256 (never ``hash()``, never the global random)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _vary_call(call: Call, rng: random.Random, server: str) -> Call:
    call = copy.deepcopy(call)
    req = call["arguments"].get("request") if call["name"] == "execute" else None
    if isinstance(req, dict):
        if rng.random() < 0.3 and str(req.get("url", "")).startswith("/"):
            req["url"] = server + req["url"]
        if rng.random() < 0.3 and req.get("headers"):
            req["headers"] = {k.lower(): v for k, v in req["headers"].items()}
        if rng.random() < 0.2 and isinstance(req.get("body"), dict):
            req["body"] = json.dumps(req["body"])
        if rng.random() < 0.2:
            req["protocol"] = "rest"
    if rng.random() < 0.4:
        call = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
    return call


def _extras(rng: random.Random, task: Task) -> list[Call]:
    """A harmless look-around between steps: a search, or reading a vault variable."""
    words = [w for w in task.prompt.replace("/", " ").split() if w.isalpha() and len(w) > 5]
    if words and rng.random() < 0.6:
        return [{"name": "search", "arguments": {"query": rng.choice(words).lower()}}]
    return [{"name": "read", "arguments": {"entity_ref": "variable:client_id"}}]


def varied_script(task: Task, attempt: int, server: str) -> tuple[list[tuple[Call, int | None]], str]:
    """Attempt ``attempt``'s calls and answer: golden + benign variation from a seeded stream."""
    rng = derive_rng("oracle", task.id, attempt)
    calls: list[tuple[Call, int | None]] = []
    if rng.random() < 0.3:  # agents often read the spec once up front
        calls.append(({"name": "read", "arguments": {"entity_ref": {"kind": "spec", "id": "openapi"}}}, None))
    steps = golden_calls(task)
    for call, ref in steps:
        if rng.random() < 0.25:
            calls += [(c, None) for c in _extras(rng, task)]
        calls.append((_vary_call(call, rng, server), ref))
        if call["name"] == "execute" and rng.random() < 0.15:
            req = call["arguments"]["request"]
            if str(req.get("method", "GET")).upper() == "GET":
                calls.append((copy.deepcopy(call), None))  # a harmless re-read
    card: dict[str, Any] = dict(task.expected_card)
    for field, value in card.items():
        if isinstance(value, int | float) and not isinstance(value, bool) and rng.random() < 0.3:
            card[field] = str(value)
    preamble = rng.choice(("Done.", "All finished — summary below.", "Here is what I found."))
    return calls, card_message(card, preamble)


def solvability(
    task: Task, world: WorldDef, log: GateLog, oracle_model: str | None = None, bank: Any = None
) -> bool:
    """Ten oracle attempts; at least three must pass."""
    passes = 0
    if oracle_model in (None, OFFLINE_ORACLE):
        for attempt in range(ATTEMPTS):
            calls, answer = varied_script(task, attempt, world.server)
            passes += run_script(task, world, calls, answer, id_seed=attempt)[1].passed
    else:
        passes = _model_attempts(task, world, oracle_model, bank)
    return log.add(task.id, "solvability", passes >= REQUIRED, f"{passes}/{ATTEMPTS} oracle attempts passed")


def _model_attempts(task: Task, world: WorldDef, model_name: str, bank: Any) -> int:
    from apiflow.agent import TrialSpec
    from apiflow.models import make_model
    from apiflow.models.registry import model_slug
    from apiflow.runner import play_trial_sync

    passes = 0
    for attempt in range(ATTEMPTS):
        model = make_model(model_name, task, attempt)
        spec = TrialSpec(
            task=task, world=world, seed=attempt, epoch=attempt + 1, bank_name=getattr(bank, "name", "gate"),
            bank_hash=getattr(bank, "hash", ""), run_id="bank-gate", model_slug=model_slug(model_name),
        )  # fmt: skip
        record = play_trial_sync(spec, model)
        passes += bool(record.passed)
    return passes
