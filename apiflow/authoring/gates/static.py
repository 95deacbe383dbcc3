"""Static gates: the leak check and discoverability of every success-path gate."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from apiflow.authoring.gates.result import GateLog
from apiflow.authoring.gates.solo import card_strings
from apiflow.bank.task import Task
from apiflow.world import HttpRequest, WorldDef, WorldSession, body_text

TRANSPORT_HEADERS = {"authorization", "content-type", "content-length", "accept"}


def _norm(value: Any) -> str:
    return re.sub(r"[^a-z0-9]", "", str(value).lower())


def leak(task: Task, world: WorldDef, spec_text: str, log: GateLog) -> bool:
    """No seed value equals (or holds) a card value; neither the prompt nor the spec holds one."""
    card = task.expected_card
    problems = []
    seeds = [s.value for s in task.seed]
    for field, value in card.items():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v and any(_norm(v) == _norm(s) for s in seeds):
                problems.append(f"seed value equals card {field}={v!r}")
            if isinstance(v, int | float) and any(isinstance(s, int | float) and s == v for s in seeds):
                problems.append(f"seed number equals card {field}={v!r}")
    for v in card_strings(card):
        if any(isinstance(s, str) and v in s for s in seeds):
            problems.append(f"a seed value contains card value {v!r}")
        if v in task.prompt:
            problems.append(f"prompt contains card value {v!r}")
        if v in spec_text:
            problems.append(f"spec contains card value {v!r}")
    return log.add(task.id, "leak", not problems, "; ".join(problems))


def send_request(session: WorldSession, req: dict[str, Any]) -> Any:
    """Send one golden ``execute`` request (headers lower-cased, as the transport does)."""
    headers = {k.lower(): v for k, v in (req.get("headers") or {}).items()}
    return session.send(HttpRequest(str(req.get("method", "GET")), str(req["url"]), headers, req.get("body")))


def _fork(session: WorldSession, world: WorldDef) -> WorldSession:
    twin = WorldSession(world, seed=session.seed)
    twin.state = session.state  # dispatch never mutates state, so sharing it is safe
    return twin


def _without(body: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    head, *rest = path
    if not rest:
        return {k: v for k, v in body.items() if k != head}
    return {**body, head: _without(body[head], tuple(rest))}


def _with(body: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    head, *rest = path
    return {**body, head: value if not rest else _with(body[head], tuple(rest), value)}


def _body_items(body: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out = []
    for key, value in body.items():
        out.append(((*prefix, key), value))
        if isinstance(value, dict):
            out += _body_items(value, (*prefix, key))
    return out


WRONG = "zz-not-this"


def _names(req: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, name, the natural attempt without it) for every header and its value, body key
    (nested ones too) and string value, query parameter and value, and path segment."""
    out = []
    headers = req.get("headers") or {}
    for name, value in headers.items():
        if name.lower() not in TRANSPORT_HEADERS:
            out.append(("header", name, {**req, "headers": {k: v for k, v in headers.items() if k != name}}))
            out.append(("header value", str(value), {**req, "headers": {**headers, name: WRONG}}))
    body = req.get("body")
    if isinstance(body, dict):
        for path, value in _body_items(body):
            out.append(("body field", path[-1], {**req, "body": _without(body, path)}))
            if isinstance(value, str):
                out.append(("body value", value, {**req, "body": _with(body, path, WRONG)}))
    parts = urlsplit(str(req["url"]))
    for key, value in parse_qsl(parts.query):
        out.append(("query parameter", key, {**req, "url": parts.path}))
        if not value.isdigit():
            out.append(("query value", value, {**req, "url": parts.path}))
    for segment in parts.path.split("/"):
        if segment and not re.fullmatch(r"v\d+", segment):
            out.append(("path segment", segment, req))
    return out


def discoverability(task: Task, world: WorldDef, spec_text: str, log: GateLog) -> bool:
    """Every name and value the golden requests need is in the prompt, spec, seed or an earlier response,
    or is named by the error the request gets without it (the natural first attempt)."""
    session = WorldSession(world, seed=0, state_overrides=task.world_state)
    known = "\n".join([task.prompt, spec_text, json.dumps([s.value for s in task.seed])]).lower()
    hidden = []
    for step in task.golden:
        for call in step.calls:
            if call.name != "execute":
                continue
            req = call.arguments["request"]
            # Exploratory (non-essential) calls are allowed to fail; only the success path must be discoverable.
            for kind, name, stripped in _names(req) if step.essential else ():
                if name.lower() in known:
                    continue
                answer = send_request(_fork(session, world), stripped)
                if 200 <= answer.status < 300 and stripped is not req:
                    continue  # the request succeeds without it: not a gate on the success path
                if name.lower() not in (body_text(answer.body) + json.dumps(answer.headers)).lower():
                    hidden.append(f"{kind} {name!r} of {req['method']} {req['url']}")
            response = send_request(session, req)
            known += "\n" + (body_text(response.body) + json.dumps(response.headers)).lower()
    return log.add(task.id, "discoverability", not hidden, "; ".join(hidden[:3]))
