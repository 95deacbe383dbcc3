"""``example-agent/rules``: a deterministic few-rule agent, shipped as an apiflow model plug-in.

It plays a trial in fixed phases, each one reply with tool calls, deciding every step from what
the conversation shows (the prompt, the tool results), never from the task's answer key:

1. look around: list the variables, read the OpenAPI spec;
2. read every vault variable;
3. mint a token: POST the current (not deprecated) ``.../token`` route of the API version the
   prompt names, with the vault's client credentials;
4. list the collection the prompt names (a GET route without path parameters whose last segment
   appears in the prompt), with the bearer token, and follow ``next_cursor`` pages;
5. answer: the item whose boolean flag the prompt names is true, its fields mapped onto the
   answer card's field names.

Whatever it cannot work out, it says so in its answer (the grader fails it; no harness fault).
"""

from __future__ import annotations

import json
import re
from typing import Any

from apiflow.models import GenerateConfig, ModelOutput, ToolCall, Usage

PREFIX = "example-agent"
MODELS = ("rules",)
MAX_PAGES = 10


class RulesAgent:
    """One trial's agent (the factory builds a fresh one per trial, so its state is the trial's)."""

    def __init__(self, name: str) -> None:
        self.model_api = name  # recorded as ``model_api``: the name it was asked for
        self.phase = "look"
        self.vault: dict[str, Any] = {}
        self.spec: dict[str, Any] = {}
        self.token = ""
        self.items: list[dict[str, Any]] = []
        self.pages = 0
        self.list_path = ""
        self.calls = 0

    async def generate(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], config: GenerateConfig
    ) -> ModelOutput:
        prompt = next(str(m["content"]) for m in messages if m["role"] == "user")
        results = _latest_results(messages)
        step = getattr(self, f"_{self.phase}")
        return step(prompt, results)

    # Each phase reads the results of the previous reply and returns the next reply.

    def _look(self, prompt: str, results: list[Any]) -> ModelOutput:
        self.phase = "vault"
        return self._call(
            ("search", {"query": "", "kind": "variable"}), ("read", {"entity_ref": "spec:openapi"})
        )

    def _vault(self, prompt: str, results: list[Any]) -> ModelOutput:
        names = [v["id"] for v in _first(results, list) or [] if v.get("scope") == "vault"]
        spec = _first(results, dict) or {}
        self.spec = spec.get("content", {}).get("document", {})
        if not names:
            return self._answer(prompt, "no vault variables to work with")
        self.phase = "token"
        return self._call(
            *(("read", {"entity_ref": {"kind": "variable", "id": n}, "scope": "vault"}) for n in names)
        )

    def _token(self, prompt: str, results: list[Any]) -> ModelOutput:
        self.vault = {r["name"]: r["value"] for r in results if isinstance(r, dict) and "name" in r}
        path = self._route(prompt, "post", lambda p: p.endswith("/token"))
        if not path or "client_id" not in self.vault:
            return self._answer(prompt, "no token route or no client credentials")
        self.phase = "list"
        body = {
            "grant_type": "client_credentials",
            "client_id": self.vault["client_id"],
            "client_secret": self.vault.get("client_secret", ""),
        }
        return self._call(("execute", {"request": {"method": "POST", "url": path, "body": body}}))

    def _list(self, prompt: str, results: list[Any]) -> ModelOutput:
        body = _body(_first(results, dict))
        self.token = str(body.get("access_token", "")) if isinstance(body, dict) else ""
        words = set(re.findall(r"[a-z]+", prompt.lower()))
        self.list_path = self._route(
            prompt, "get", lambda p: "{" not in p and p.rsplit("/", 1)[-1] in words, prefer="List"
        )
        if not self.token or not self.list_path:
            return self._answer(prompt, "no token, or no collection route the prompt names")
        self.phase = "page"
        return self._get(self.list_path)

    def _page(self, prompt: str, results: list[Any]) -> ModelOutput:
        body = _body(_first(results, dict))
        if isinstance(body, dict):
            self.items += next((v for v in body.values() if isinstance(v, list)), [])
            cursor = body.get("next_cursor")
            self.pages += 1
            if cursor and self.pages < MAX_PAGES:
                return self._get(f"{self.list_path}?cursor={cursor}")
        return self._answer(prompt)

    def _done(self, prompt: str, results: list[Any]) -> ModelOutput:
        return ModelOutput(text="Done.")

    # Helpers.

    def _route(self, prompt: str, method: str, wanted: Any, prefer: str = "") -> str:
        """The first current route of the prompt's API version that ``wanted`` accepts."""
        version = re.search(r"\bv(\d+)\b", prompt)
        routes = []
        for path, ops in (self.spec.get("paths") or {}).items():
            summary = str((ops.get(method) or {}).get("summary", ""))
            if method not in ops or "DEPRECATED" in summary or not wanted(path):
                continue
            if version and not path.startswith(f"/v{version.group(1)}/"):
                continue
            routes.append((not summary.startswith(prefer), path))
        return min(routes)[1] if routes else ""

    def _get(self, url: str) -> ModelOutput:
        headers = {"Authorization": f"Bearer {self.token}"}
        return self._call(("execute", {"request": {"method": "GET", "url": url, "headers": headers}}))

    def _call(self, *calls: tuple[str, dict[str, Any]]) -> ModelOutput:
        out = []
        for name, arguments in calls:
            out.append(ToolCall(f"rules-{self.calls}", name, arguments))
            self.calls += 1
        return ModelOutput(tool_calls=tuple(out), usage=Usage())

    def _answer(self, prompt: str, problem: str = "") -> ModelOutput:
        self.phase = "done"
        fields = _card_fields(prompt)
        words = set(re.findall(r"[a-z]+", prompt.lower()))
        flagged = [i for i in self.items if any(v is True and k in words for k, v in i.items())]
        if problem or not flagged or not fields:
            reason = problem or (
                "no item is flagged as the prompt says" if fields else "no answer card asked"
            )
            return ModelOutput(text=f"I could not finish: {reason}.")
        item = flagged[0]
        card = {f: _field_value(f, item) for f in fields}
        return ModelOutput(text="Done.\n\n```json\n" + json.dumps(card, indent=2) + "\n```")


def _latest_results(messages: list[dict[str, Any]]) -> list[Any]:
    """The tool results after the last assistant turn, JSON-decoded where they are JSON."""
    results: list[Any] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        try:
            results.append(json.loads(message["content"]))
        except (TypeError, ValueError):
            results.append(message["content"])
    return results[::-1]


def _first(results: list[Any], kind: type) -> Any:
    return next((r for r in results if isinstance(r, kind)), None)


def _body(result: dict[str, Any] | None) -> Any:
    try:
        return json.loads((result or {}).get("body_preview") or "null")
    except ValueError:
        return None


def _card_fields(prompt: str) -> list[str]:
    _, _, tail = prompt.partition("field(s):")
    return re.findall(r"`([A-Za-z0-9_]+)`", tail.split(".")[0])


def _field_value(field: str, item: dict[str, Any]) -> Any:
    """The item's value for a card field: same key, else the key the field ends with."""
    if field in item:
        return item[field]
    matches = [k for k in item if field.endswith(k)]
    return item[max(matches, key=len)] if matches else None


class Plugin:
    """The entry point's object: ``make_model`` builds a trial's agent, ``check`` refuses unknown
    model names before any trial runs, ``prices`` says it costs nothing (it calls no provider)."""

    prices = {"input": 0.0, "output": 0.0}

    @staticmethod
    def check(name: str) -> None:
        model = name.partition("/")[2]
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r}; this plug-in serves: {', '.join(MODELS)}")

    @staticmethod
    def make_model(name: str, task: Any, seed: int, params: dict[str, Any] | None) -> RulesAgent:
        # Deterministic: the agent draws no randomness, so ``seed`` is not needed.
        return RulesAgent(name)


plugin = Plugin()
