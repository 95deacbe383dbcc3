"""Stand-ins for the loop tests: a tiny task, a fake toolbox and scripted model helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from apiflow.bank.task import GoldenCall, GoldenStep, Task
from apiflow.grading.spec import AnswerFieldSpec


@dataclass(frozen=True)
class FakeResult:
    content: str
    error: dict[str, str] | None = None
    terminated: str | None = None
    parse_error: bool = False
    limit: str | None = None


@dataclass
class FakeToolbox:
    """Answers like the real tools in shape: executes mint refs, bad JSON is a parsing error."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    executes: int = 0

    def call(self, name: str, arguments: dict[str, Any] | str, scanned: Any = None) -> FakeResult:
        self.calls.append((name, arguments))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return FakeResult("", {"type": "parsing", "message": "bad JSON"}, parse_error=True)
        if name == "boom":
            raise RuntimeError("tool bug")
        if name in ("clarify", "report_blocked"):
            text = next(iter(arguments.values()), "")
            return FakeResult(f"trial terminated ({name}): {text}", terminated=name)
        if name == "execute":
            self.executes += 1
            ref = f"request:req-{self.executes:06x}/response:resp-{self.executes:08x}"
            return FakeResult(
                json.dumps({"response_ref": ref, "status": 200, "headers": {}, "body_preview": "{}"})
            )
        if name == "read" and "resp-00000000" in json.dumps(arguments):
            return FakeResult("", {"type": "unknown", "message": "Entity response:resp-00000000 not found."})
        return FakeResult(json.dumps({"ok": name}))


def tiny_task(kind: str = "solo", steps: int = 3) -> Task:
    """A task whose golden path is ``steps`` executes, the last one reading the first response."""
    golden = [
        GoldenStep(
            calls=[
                GoldenCall(name="execute", arguments={"request": {"method": "POST", "url": f"/v1/step{i}"}})
            ],
            decoy=[
                GoldenCall(name="execute", arguments={"request": {"method": "POST", "url": f"/v0/step{i}"}})
            ],
        )
        for i in range(steps)
    ]
    golden.append(GoldenStep(calls=[GoldenCall(name="read", arguments={"entity_ref": "{{ref:0}}"})]))
    task_id = "tst-w01-sub01" if kind == "solo" else f"tst-w01-chain-1to{steps:02d}"
    return Task(
        id=task_id,
        world="w01",
        kind=kind,  # type: ignore[arg-type]
        length=1 if kind == "solo" else steps,
        prompt="Commit the plan and tell me where it ended up.",
        card_fields=["plan_id", "count"],
        predicates=[
            AnswerFieldSpec(field="plan_id", expected="plan-1a2b-0001", comparator="string"),
            AnswerFieldSpec(field="count", expected=3, comparator="numeric"),
        ],
        golden=golden,
    )
