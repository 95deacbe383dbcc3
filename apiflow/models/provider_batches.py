"""The providers' batch endpoints, behind ``turn_batcher.BatchApi``.

* OpenAI (``openai/`` chat route): through litellm's files and batches functions (upload a JSONL
  file, create, retrieve, read the output and error files, cancel, list by ``metadata``).
* Anthropic (``anthropic/``): Message Batches over plain HTTP. litellm 1.110 cannot create one, and its
  results reader rewrites each message into OpenAI's shape, while the turn must reach litellm's
  own Anthropic parser as the synchronous endpoint would have sent it (``batch_transport``).

Each result becomes ``{"ok": True, "body": <the synchronous endpoint's response body>}`` or
``{"ok": False, "kind": "errored" | "expired" | "canceled", "error": ...}``.
"""

from __future__ import annotations

import io
import json
import os
from datetime import datetime
from types import ModuleType
from typing import Any

import httpx
import httpx2

from apiflow.models.litellm_client import _litellm
from apiflow.models.turn_batcher import BatchApi, Result

OPENAI_DONE = frozenset({"completed", "expired", "cancelled", "failed"})
ANTHROPIC_VERSION = "2023-06-01"
FIND_SLACK_S = 300.0
"""A batch created this long before its intent's time still counts as a candidate (clock skew)."""
SUBMIT_WINDOW_S = 600.0
"""... and one created this long after it (a slow or retried create call)."""


def batch_api(model: str, params: dict[str, Any]) -> BatchApi:
    """The batch endpoints of a grid model's route.

    Raises:
        ValueError: The route has no batch tier here (``tier: batch`` is refused at grid load).
    """
    if model.startswith("openai/") and not model.startswith("openai/responses/"):
        return OpenAIBatches(model, params)
    if model.startswith("anthropic/"):
        return AnthropicBatches(model, params)
    raise ValueError(f"no batch tier for {model!r}: openai/ (chat) and anthropic/ models have one")


def wire_library(model: str) -> ModuleType:
    """The httpx library a route's client sends through: litellm's Anthropic handler uses ``httpx``,
    the OpenAI SDK ``httpx2``."""
    return httpx if model.startswith("anthropic/") else httpx2


def provider_client(model: str, params: dict[str, Any], transport: Any) -> Any:
    """The client object litellm's ``client=`` takes on a route, sending over ``transport``."""
    if model.startswith("anthropic/"):
        return _litellm().llms.custom_httpx.http_handler.AsyncHTTPHandler(transport=transport)
    import openai  # litellm's own dependency: the openai/ route's client type

    base = params.get("api_base") or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    key = params.get("api_key") or os.environ.get("OPENAI_API_KEY", "")
    client = httpx2.AsyncClient(transport=transport, timeout=None)
    return openai.AsyncOpenAI(api_key=key, base_url=base, max_retries=0, http_client=client)


def endpoint_of(model: str) -> str:
    """The synchronous endpoint a route's batched requests stand for."""
    return "/v1/messages" if model.startswith("anthropic/") else "/v1/chat/completions"


class OpenAIBatches:
    """OpenAI's Batch API through litellm (``custom_llm_provider="openai"``)."""

    def __init__(self, model: str, params: dict[str, Any]) -> None:
        self.route = model
        self.where = {k: params[k] for k in ("api_base", "api_key") if params.get(k)}

    async def submit(self, key: str, requests: list[dict[str, Any]]) -> str:
        litellm = _litellm()
        lines = [{"custom_id": r["custom_id"], "method": "POST", "url": "/v1/chat/completions", "body": r["body"]}
                 for r in requests]  # fmt: skip
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        upload = await litellm.acreate_file(
            file=(f"{key}.jsonl", io.BytesIO(data)),
            purpose="batch",
            custom_llm_provider="openai",
            **self.where,
        )
        batch = await litellm.acreate_batch(
            completion_window="24h", endpoint="/v1/chat/completions", input_file_id=upload.id,
            custom_llm_provider="openai", metadata={"apiflow_batch": key}, **self.where,
        )  # fmt: skip
        return str(batch.id)

    async def _batch(self, batch_id: str) -> Any:
        return await _litellm().aretrieve_batch(batch_id=batch_id, custom_llm_provider="openai", **self.where)

    async def ended(self, batch_id: str) -> bool:
        return (await self._batch(batch_id)).status in OPENAI_DONE

    async def results(self, batch_id: str) -> dict[str, Result]:
        batch = await self._batch(batch_id)
        found: dict[str, Result] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await _litellm().afile_content(
                file_id=file_id, custom_llm_provider="openai", **self.where
            )
            for line in content.content.decode().splitlines():
                if line.strip():
                    item = json.loads(line)
                    found[item["custom_id"]] = _openai_result(item)
        return found

    async def cancel(self, batch_id: str) -> None:
        await _litellm().acancel_batch(batch_id=batch_id, custom_llm_provider="openai", **self.where)

    async def find(self, key: str, custom_ids: list[str], since: float) -> str | None:
        after = None
        while True:
            page = await _litellm().alist_batches(
                after=after, limit=100, custom_llm_provider="openai", **self.where
            )
            for batch in page.data:
                if (batch.metadata or {}).get("apiflow_batch") == key:
                    return str(batch.id)
            if not page.has_more or not page.data or page.data[-1].created_at < since - FIND_SLACK_S:
                return None
            after = page.data[-1].id


def _openai_result(item: dict[str, Any]) -> Result:
    response, error = item.get("response") or {}, item.get("error") or {}
    if response.get("status_code") == 200:
        return {"ok": True, "body": response["body"]}
    code = str(error.get("code") or (response.get("body") or {}).get("error", {}).get("code") or "")
    kind = "expired" if "expired" in code else "canceled" if "cancel" in code else "errored"
    return {
        "ok": False,
        "kind": kind,
        "error": error.get("message") or json.dumps(response.get("body"))[:300],
    }


class AnthropicBatches:
    """Anthropic's Message Batches API, over HTTP (see the module docstring)."""

    def __init__(self, model: str, params: dict[str, Any]) -> None:
        self.route = model
        base = str(params.get("api_base") or "https://api.anthropic.com").rstrip("/")
        self.base = base.removesuffix("/v1")
        self.key = params.get("api_key")

    def _headers(self) -> dict[str, str]:
        key = self.key or os.environ.get("ANTHROPIC_API_KEY", "")
        return {
            "x-api-key": str(key),
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
        }

    async def _call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        async with httpx.AsyncClient(timeout=120) as client:
            reply = await client.request(method, f"{self.base}/v1/messages/batches{path}",
                                         headers=self._headers(), json=body)  # fmt: skip
        reply.raise_for_status()
        return reply

    async def submit(self, key: str, requests: list[dict[str, Any]]) -> str:
        sent = [{"custom_id": r["custom_id"], "params": r["body"]} for r in requests]
        return str((await self._call("POST", "", {"requests": sent})).json()["id"])

    async def ended(self, batch_id: str) -> bool:
        return (await self._call("GET", f"/{batch_id}")).json()["processing_status"] == "ended"

    async def results(self, batch_id: str) -> dict[str, Result]:
        found: dict[str, Result] = {}
        for line in (await self._call("GET", f"/{batch_id}/results")).text.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            result = item["result"]
            if result["type"] == "succeeded":
                found[item["custom_id"]] = {"ok": True, "body": result["message"]}
            else:
                error = json.dumps(result.get("error") or {})[:300]
                found[item["custom_id"]] = {"ok": False, "kind": result["type"], "error": error}
        return found

    async def cancel(self, batch_id: str) -> None:
        await self._call("POST", f"/{batch_id}/cancel")

    async def find(self, key: str, custom_ids: list[str], since: float) -> str | None:
        """A Message Batch carries no tag. A candidate is a batch of our size created in the minutes
        after the intent was written. It is ours for sure when it has ended and its results hold
        exactly our custom ids. Failing that, the running candidate created soonest after the intent
        is attached to; if its results then lack our ids, those turns go synchronous (048)."""
        wanted, after, running = set(custom_ids), None, []
        while True:
            query = "?limit=100" + (f"&after_id={after}" if after else "")
            page = (await self._call("GET", query)).json()
            for batch in page["data"]:
                made = _epoch(batch["created_at"])
                if made < since - FIND_SLACK_S:
                    page["has_more"] = False
                    break
                if made > since + SUBMIT_WINDOW_S or sum(batch["request_counts"].values()) != len(wanted):
                    continue
                if batch["processing_status"] != "ended":
                    running.append((abs(made - since), str(batch["id"])))
                elif set((await self.results(batch["id"])).keys()) == wanted:
                    return str(batch["id"])
            if not page.get("has_more") or not page["data"]:
                return min(running)[1] if running else None
            after = page["last_id"]


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
