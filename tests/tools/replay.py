"""Replay a published transcript's tool calls through our Toolbox and compare the results.

The replayed world answers each ``execute`` with the response the transcript recorded, and
ids are the recorded ones, so every later call (reads of ``resp-…`` refs, searches) sees
the same workspace the published harness had. The seed variables and the spec are
recovered from what the transcript shows of them (variable reads and listings, spec reads
of the same world).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apiflow.tools import Toolbox, Workspace
from apiflow.world.errors import TransportError
from apiflow.world.http import HttpRequest, HttpResponse

DATA = Path(__file__).parent / "data" / "published_tool_calls.json.gz"
PREVIEW_MARK = "…"
_WRITTEN = re.compile(r"^variable (?P<scope>.*?):(?P<name>[^:]*) written$")


def load_transcripts() -> list[dict[str, Any]]:
    """``[{file, calls: [{name, arguments, content, error}]}]`` for the 42 fixtures."""
    return json.loads(gzip.decompress(DATA.read_bytes()))


def world_of(file: str) -> str:
    match = re.search(r"-(w\d\d)-", file)
    assert match, file
    return match[1]


def specs_by_world(transcripts: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``spec:openapi`` content of each world, from any transcript that read it."""
    specs: dict[str, Any] = {}
    for t in transcripts:
        for call in t["calls"]:
            if call["name"] == "read" and call["content"].startswith('{\n  "ref": "spec:openapi"'):
                specs[world_of(t["file"])] = json.loads(call["content"])["content"]
    return specs


@dataclass
class Seeds:
    """Seed variables as the transcript reveals them, in listing order."""

    values: dict[tuple[str, str], Any] = field(default_factory=dict)

    def as_list(self) -> list[Any]:
        return [_Seed(scope, name, value) for (scope, name), value in self.values.items()]


@dataclass(frozen=True)
class _Seed:
    scope: str
    name: str
    value: Any


def _scope_key(item: tuple[tuple[str, str], Any]) -> int:
    order = ("vault", "local", "global")
    scope = item[0][0]
    return order.index(scope) if scope in order else len(order)


def infer_seeds(calls: list[dict[str, Any]]) -> Seeds:
    """Variables that existed before the agent wrote them: listed by search or read back."""
    seeds = Seeds()
    written: set[tuple[str, str]] = set()
    for call in calls:
        if call["error"]:
            continue
        content = call["content"]
        if call["name"] == "write":
            match = _WRITTEN.match(content)
            if match:
                written.add((match["scope"], match["name"]))
        elif call["name"] == "search":
            for hit in json.loads(content):
                key = (hit["scope"], hit["id"]) if isinstance(hit, dict) else None
                if key and key not in written:
                    seeds.values.setdefault(key, None)
        elif call["name"] == "read" and content.startswith('{"scope"'):
            value = json.loads(content)
            key = (value["scope"], value["name"])
            if key not in written:
                seeds.values[key] = value["value"]
    seeds.values = dict(sorted(seeds.values.items(), key=_scope_key))
    return seeds


def _truncated(preview: str) -> bool:
    return len(preview) == 601 and preview.endswith(PREVIEW_MARK)


def full_bodies(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Response ref -> full body, from reads of responses anywhere in the transcript."""
    bodies = {}
    for call in calls:
        if (
            call["name"] == "read"
            and not call["error"]
            and call["content"].startswith('{\n  "ref": "request:')
        ):
            entity = json.loads(call["content"])
            if "/response:" in entity["ref"]:
                bodies[entity["ref"]] = entity["content"]["body"]
    return bodies


class ScriptedIds:
    """Hands out the ids the published run minted, call by call."""

    def __init__(self) -> None:
        self.queue: deque[str] = deque()

    def request_id(self) -> str:
        return self.queue.popleft()

    def response_id(self) -> str:
        return self.queue.popleft()


@dataclass
class Replay:
    """One transcript replayed: per call, the recorded and our result."""

    file: str
    outcomes: list[tuple[dict[str, Any], Any, bool]]  # (recorded call, our ToolResult, body known)


class RecordedWorld:
    """Answers the next execute with the recorded response (or network error)."""

    def __init__(self) -> None:
        self.next: HttpResponse | TransportError | None = None

    def send(self, request: HttpRequest) -> HttpResponse:
        answer, self.next = self.next, None
        if isinstance(answer, TransportError):
            raise answer
        assert answer is not None, f"unexpected send {request}"
        return answer


def _prepare_execute(
    call: dict[str, Any], ids: ScriptedIds, world: RecordedWorld, bodies: dict[str, Any]
) -> bool:
    """Queue the recorded ids and response; returns whether the full body is known."""
    if call["error"]:
        return True
    result = json.loads(call["content"])
    if "error" in result:
        ref = result["request_ref"]
        if "/" not in ref and ref.startswith("request:req-"):
            ids.queue.append(ref.split(":", 1)[1])
        world.next = TransportError(result["error"])
        return True
    request_ref, response_ref = result["response_ref"].split("/")
    call_args = call["arguments"]
    if "request" in call_args and call_args.get("request") is not None:
        ids.queue.append(request_ref.split(":", 1)[1])
    ids.queue.append(response_ref.split(":", 1)[1])
    preview = result["body_preview"]
    known = True
    if result["response_ref"] in bodies:
        body = bodies[result["response_ref"]]
    elif _truncated(preview):
        body, known = preview, False
    else:
        try:
            body = json.loads(preview)
        except ValueError:
            body = preview
    world.next = HttpResponse(result["status"], result["headers"], body)
    return known


def replay(transcript: dict[str, Any], spec: Any) -> Replay:
    """Run every recorded call of one transcript through a fresh Toolbox."""
    calls = transcript["calls"]
    workspace = Workspace(infer_seeds(calls).as_list(), spec, id_seed=0)
    ids = ScriptedIds()
    workspace.ids = ids  # type: ignore[assignment]
    world = RecordedWorld()
    toolbox = Toolbox(workspace, world.send)
    bodies = full_bodies(calls)
    outcomes = []
    known_so_far = True
    for call in calls:
        if call["name"] == "execute":
            known_so_far &= _prepare_execute(call, ids, world, bodies)
        result = toolbox.call(call["name"], call["arguments"])
        ids.queue.clear()
        world.next = None
        outcomes.append((call, result, known_so_far))
    return Replay(transcript["file"], outcomes)
