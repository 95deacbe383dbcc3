"""Tiny schema-1.0 transcripts written in tests (one tool call per assistant turn)."""

from __future__ import annotations

import json
from typing import Any

from apiflow.grading import Evidence, evidence_from_transcript


class Script:
    """Builds a trial's ``messages`` call by call, with published-shaped tool results."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": "system"},
            {"role": "user", "content": "user"},
        ]
        self._n = 0
        self._resp = 0

    def call(
        self, name: str, arguments: dict[str, Any], content: str, error: dict[str, str] | None = None
    ) -> str:
        self._n += 1
        call_id = f"call_{self._n}"
        self.messages.append(
            {
                "role": "assistant",
                "content": [],
                "tool_calls": [{"id": call_id, "name": name, "arguments": arguments}],
            }
        )
        tool: dict[str, Any] = {
            "role": "tool",
            "content": "" if error else content,
            "tool_call_id": call_id,
            "function": name,
        }
        if error:
            tool["error"] = error
        self.messages.append(tool)
        return content

    def execute(
        self,
        request: dict[str, Any] | None = None,
        *,
        status: int = 200,
        body: Any = None,
        target: str | None = None,
        preview: str | None = None,
        as_string: bool = False,
    ) -> str:
        """Send ``request`` inline (or ``target``); returns the response ref."""
        self._resp += 1
        ref = f"request:req-{self._resp:06x}/response:resp-{self._resp:08x}"
        if preview is None:
            preview = body if isinstance(body, str) else json.dumps(body)
        result = {"response_ref": ref, "status": status, "headers": {"server": "t"}, "body_preview": preview}
        args: dict[str, Any] = (
            {"target": target} if target else {"request": json.dumps(request) if as_string else request}
        )
        self.call("execute", args, json.dumps(result))
        return ref

    def network_error(self, request: dict[str, Any]) -> None:
        self._resp += 1
        result = {
            "error": "network: ConnectError: All connection attempts failed",
            "request_ref": f"request:req-{self._resp:06x}",
        }
        self.call("execute", {"request": request}, json.dumps(result))

    def read_response(self, ref: str, body: Any) -> None:
        req, resp = ref.split("/")
        content = {
            "ref": ref,
            "content": {"status": 200, "headers": {}, "body": body, "url": "", "method": "GET"},
            "updated_at": "2026-01-01T00:00:00.000000+00:00",
        }
        self.call(
            "read",
            {
                "entity_ref": {
                    "kind": "response",
                    "id": resp.split(":")[1],
                    "parent": {"kind": "request", "id": req.split(":")[1]},
                }
            },
            json.dumps(content, indent=2),
        )

    def write_variable(self, name: str, value: Any, scope: str = "local") -> None:
        self.call(
            "write",
            {"entity_ref": {"kind": "variable", "id": name}, "content": {"value": value}, "scope": scope},
            f"variable {scope}:{name} written",
        )

    def write_request(self, ident: str, content: dict[str, Any]) -> None:
        self.call(
            "write",
            {"entity_ref": f"request:{ident}", "content": json.dumps(content)},
            f"entity request:{ident} written",
        )

    def edit_request(self, ident: str, patch: dict[str, Any]) -> None:
        self.call(
            "edit",
            {"entity_ref": {"kind": "request", "id": ident}, "patch": patch},
            f"entity request:{ident} edited; keys set: {sorted(patch)!r}",
        )

    def abstain(self, kind: str, reason: str) -> None:
        arg = "question" if kind == "clarify" else "reason"
        self.call(kind, {arg: reason}, f"trial terminated ({kind}): {reason}")
        self.messages.append({"role": "assistant", "content": [{"type": "text", "text": ""}]})

    def say(self, text: str = "", reasoning: str = "") -> None:
        blocks = []
        if reasoning:
            blocks.append({"type": "reasoning", "reasoning": reasoning})
        blocks.append({"type": "text", "text": text})
        self.messages.append({"role": "assistant", "content": blocks})

    def evidence(self) -> Evidence:
        return evidence_from_transcript({"messages": self.messages})


def card(**fields: Any) -> str:
    """A final message holding ``fields`` as a fenced JSON answer card."""
    return "Done.\n\n```json\n" + json.dumps(fields) + "\n```"
