"""The scoring harness the gates share: scripted tool calls through the real Toolbox, graded by the real grader.

A gate run is a trial without the model loop: the same ``WorldSession``, ``Workspace``,
``Toolbox`` and ``grade`` a live trial uses, fed a script of tool calls and a final
answer. Skipping the loop keeps a whole-bank verification to seconds; the agent loop's
own tests cover the loop.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from typing import Any

from apiflow.bank.task import Task
from apiflow.grading import evidence_from_workspace, grade
from apiflow.grading.verdict import Grade
from apiflow.tools import Toolbox, Workspace
from apiflow.world import WorldDef, WorldSession

_REF = re.compile(r"\{\{ref:(\d+)\}\}")
MISSING_REF = "request:req-000000/response:resp-00000000"
Call = dict[str, Any]


def card_message(card: dict[str, Any] | None, preamble: str = "Done.") -> str:
    """Final assistant text: the card in a ```json block (or plain prose when ``card`` is None)."""
    if card is None:
        return ""
    return f"{preamble}\n\n```json\n{json.dumps(card, ensure_ascii=False)}\n```"


def _resolve(value: Any, refs: dict[int, str]) -> Any:
    if isinstance(value, str):
        return (
            _REF.sub(lambda m: refs.get(int(m.group(1)), MISSING_REF), value) if "{{ref:" in value else value
        )
    if isinstance(value, dict):
        return {k: _resolve(v, refs) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, refs) for v in value]
    return value


_FORKABLE = {"_entities", "_vars", "changed_variables", "clock", "exchanges", "ids"}


def fork_workspace(workspace: Workspace) -> Workspace:
    """A copy of a workspace that evolves independently.

    Entities, exchanges and variable values are never changed in place once stored (a
    write or edit stores a new entity), so the copy shares them and copies only the
    containers, the id generator and the clock. Falls back to a deep copy if the
    workspace's layout is not the one this relies on.
    """
    if set(vars(workspace)) != _FORKABLE:
        return copy.deepcopy(workspace)  # a layout this does not know: never share what it cannot vouch for
    try:
        twin = copy.copy(workspace)
        twin._entities = dict(workspace._entities)  # noqa: SLF001
        twin._vars = copy.copy(workspace._vars)  # noqa: SLF001
        twin._vars.by_scope = {k: dict(v) for k, v in workspace._vars.by_scope.items()}  # noqa: SLF001
        twin.changed_variables = set(workspace.changed_variables)
        twin.exchanges = list(workspace.exchanges)
        twin.ids = copy.deepcopy(workspace.ids)
        twin.clock = copy.copy(workspace.clock)
        return twin
    except (AttributeError, TypeError):
        return copy.deepcopy(workspace)


class Run:
    """One scripted trial in progress: fresh world session, workspace and toolbox."""

    def __init__(self, task: Task, world: WorldDef, id_seed: int = 0) -> None:
        self.task = task
        self.session = WorldSession(world, seed=id_seed, state_overrides=task.world_state)
        self.workspace = Workspace(task.seed, self.session.spec_content(), id_seed)
        self.toolbox = Toolbox(self.workspace, self.session.send)
        self.messages: list[dict[str, Any]] = []
        self.refs: dict[int, str] = {}
        self._n = 0

    def clone(self) -> Run:
        """An independent copy of this run so far (world state, workspace, messages, refs).

        World state is persistent (never mutated in place) and shared; the workspace is
        deep-copied. A clone continued with calls C is the same trial as replaying the
        prefix and then C, without paying for the prefix again.
        """
        twin = copy.copy(self)
        twin.session = copy.copy(self.session)
        twin.workspace = fork_workspace(self.workspace)
        twin.toolbox = Toolbox(twin.workspace, twin.session.send)
        twin.messages = list(self.messages)
        twin.refs = dict(self.refs)
        return twin

    def feed(self, calls: Iterable[tuple[Call, int | None]]) -> None:
        """Send tool calls in order (string arguments are passed as the model sent them)."""
        for call, ref_index in calls:
            args = call["arguments"]
            if not isinstance(args, str):
                args = _resolve(args, self.refs)
            call_id = f"g{self._n}"
            self._n += 1
            result = self.toolbox.call(call["name"], args)
            self.messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": call_id, "name": call["name"], "arguments": args}],
                }
            )
            tool_msg: dict[str, Any] = {
                "role": "tool",
                "content": result.content,
                "tool_call_id": call_id,
                "function": call["name"],
            }
            if result.error is not None:
                tool_msg["error"] = result.error
            self.messages.append(tool_msg)
            if ref_index is not None and call["name"] == "execute" and result.error is None:
                try:
                    ref = json.loads(result.content).get("response_ref")
                except (ValueError, AttributeError):
                    ref = None
                if isinstance(ref, str):
                    self.refs[ref_index] = ref

    def grade(self, answer: str) -> Grade:
        """Grade the run so far with ``answer`` as the final assistant text."""
        messages = [*self.messages, {"role": "assistant", "content": answer}]
        evidence = evidence_from_workspace(self.workspace, messages)
        return grade(self.task.predicates, self.task.checkpoints, self.task.constraints, evidence)


def golden_calls(
    task: Task,
    *,
    skip: int | None = None,
    decoy_at: set[int] | None = None,
    replace: tuple[str, str] | None = None,
    segments: set[int] | None = None,
) -> list[tuple[Call, int | None]]:
    """The golden script as calls, with a step skipped, decoys swapped in, or a value replaced.

    Args:
        task: The task.
        skip: Index of a golden step to leave out.
        decoy_at: Indices of steps whose decoy calls replace their calls.
        replace: ``(live, stale)``: substitute ``stale`` for ``live`` in the selected steps' arguments.
        segments: Restrict ``replace`` to steps of these chain segments (None: all steps).
    """
    return [
        (call, ref)
        for call, ref, _ in golden_plan(
            task, skip=skip, decoy_at=decoy_at, replace=replace, segments=segments
        )
    ]


def golden_plan(
    task: Task,
    *,
    skip: int | None = None,
    decoy_at: set[int] | None = None,
    replace: tuple[str, str] | None = None,
    segments: set[int] | None = None,
) -> list[tuple[Call, int | None, int]]:
    """Like ``golden_calls``, each call tagged with the index of the golden step it comes from."""
    out: list[tuple[Call, int | None, int]] = []
    n = 0
    for index, step in enumerate(task.golden):
        if index == skip:
            n += sum(1 for c in step.calls if c.name == "execute")
            continue
        swap = decoy_at is not None and index in decoy_at and step.decoy is not None
        for call in step.calls:
            ref = None
            if call.name == "execute":
                ref, n = n, n + 1
            if swap:
                continue
            args = call.arguments
            if replace is not None and (segments is None or step.segment in segments):
                args = json.loads(json.dumps(args).replace(replace[0], replace[1]))
            out.append(({"name": call.name, "arguments": args}, ref, index))
        if swap:
            out += [({"name": c.name, "arguments": c.arguments}, None, index) for c in step.decoy or ()]
    return out


def run_script(
    task: Task, world: WorldDef, calls: list[tuple[Call, int | None]], answer: str, id_seed: int = 0
) -> tuple[Run, Grade]:
    """Play ``calls`` then grade with ``answer``."""
    run = Run(task, world, id_seed)
    run.feed(calls)
    return run, run.grade(answer)
