"""What an agent that acts only on what it has read does with a choice its prompt does not settle.

The offline models (``apiflow/sim:*``, the calibrated panel) play a task's golden path with
deviations; they never read the prompt, so on their own they would pass an underspecified chain
as often as a good one. Screen evaluation (docs/design/071) therefore plays every chain through
this grounded view first, the same way for every cell and without knowing which cells were
planted:

* the golden path is replayed once and every **selection** is found: a listing of look-alike
  records (same id field) of which exactly one is used by a later golden step, told apart from
  the others by a flag only it has set (``"icing": true``);
* a selection is **settled** when the prompt names the flag (``icing``) or the chosen id;
* an unsettled selection is a guess: each trial the agent picks one of the listed records
  uniformly, and the later golden steps use the picked id (a wrong pick then fails downstream,
  as it would for a real agent).

A selection told apart by anything else (a last page, a value) is left as played: the view only
judges the one kind of choice it can read off the data.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from apiflow.authoring.gates.static import send_request
from apiflow.bank.task import GoldenCall, GoldenStep, Task
from apiflow.world import WorldDef, WorldSession


@dataclass(frozen=True, slots=True)
class Selection:
    """One choice of the golden path among listed look-alikes."""

    step: int  # index of the golden step whose response lists them
    chosen: str
    listed: tuple[str, ...]  # every listed id, the chosen one included, in listing order
    flags: tuple[str, ...]  # keys only the chosen record has set to true


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def _listings(body: Any) -> Iterator[list[dict[str, Any]]]:
    """Every list of two or more records anywhere in a response body."""
    if isinstance(body, dict):
        for value in body.values():
            yield from _listings(value)
    elif isinstance(body, list):
        if len(body) >= 2 and all(isinstance(item, dict) for item in body):
            yield body
        for item in body:
            yield from _listings(item)


def _id_key(items: list[dict[str, Any]]) -> str | None:
    """The id field every listed record has, with distinct string values."""
    for key in items[0]:
        values = [item.get(key) for item in items]
        if (
            key.endswith("_id")
            and all(isinstance(v, str) for v in values)
            and len(set(values)) == len(values)
        ):
            return key
    return None


def selections(task: Task, world: WorldDef) -> list[Selection]:
    """Every flag-decided selection on the task's golden path (the world replayed from the task's state)."""
    session = WorldSession(world, seed=0, state_overrides=task.world_state)
    later = [
        json.dumps([c.arguments for s in task.golden[i + 1 :] for c in s.calls])
        for i in range(len(task.golden))
    ]
    found = []
    for index, step in enumerate(task.golden):
        for call in step.calls:
            if call.name != "execute":
                continue
            response = send_request(session, call.arguments["request"])
            for items in _listings(response.body):
                key = _id_key(items)
                used = [item for item in items if key and item[key] in later[index]]
                if key is None or len(used) != 1:
                    continue
                chosen = used[0]
                flags = tuple(
                    k
                    for k, v in chosen.items()
                    if v is True and all(o.get(k) is not True for o in items if o is not chosen)
                )
                if flags:
                    found.append(Selection(index, chosen[key], tuple(item[key] for item in items), flags))
    return found


def settled(selection: Selection, prompt: str) -> bool:
    """The prompt names the flag that decides the selection, or the chosen id itself."""
    text = _words(prompt)
    return selection.chosen in prompt or any(
        _words(flag.replace("_", " ")) in text for flag in selection.flags
    )


def _swap(step: GoldenStep, live: str, picked: str) -> GoldenStep:
    def calls(items: list[GoldenCall] | None) -> list[GoldenCall] | None:
        if items is None:
            return None
        return [
            GoldenCall(name=c.name, arguments=json.loads(json.dumps(c.arguments).replace(live, picked)))
            for c in items
        ]

    return step.model_copy(update={"calls": calls(step.calls), "decoy": calls(step.decoy)})


class GroundedView:
    """A task's unsettled selections, found once; ``play`` draws one trial's guesses."""

    def __init__(self, task: Task, world: WorldDef) -> None:
        self.task = task
        self.open = [s for s in selections(task, world) if not settled(s, task.prompt)]

    def play(self, rng: random.Random) -> Task:
        """The task as this trial's agent plays it: each unsettled selection guessed among the listed ids."""
        if not self.open:
            return self.task
        golden = list(self.task.golden)
        for selection in self.open:
            picked = rng.choice(selection.listed)
            if picked != selection.chosen:
                golden[selection.step + 1 :] = [
                    _swap(s, selection.chosen, picked) for s in golden[selection.step + 1 :]
                ]
        return self.task.model_copy(update={"golden": golden})
