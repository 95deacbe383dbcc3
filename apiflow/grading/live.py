"""Evidence of a trial run by our own loop: straight from the workspace, full bodies known.

Duck-typed on the tools package's ``Workspace`` (``exchanges``, ``variables()``,
``changed_variables``, ``entities``) so grading does not import the tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from apiflow.grading.answer import final_message
from apiflow.grading.evidence import Evidence, Exchange, task_text_of
from apiflow.grading.transcript import PREVIEW_LIMIT, abstention_in, cut_previews, ending_of

_ELLIPSIS = "…"


def _exchange(index: int, sent: Any, cut: dict[str, str]) -> Exchange:
    """``Exchange.sent`` of one workspace exchange."""
    response = sent.response
    return Exchange.sent(
        index,
        sent.request if isinstance(sent.request, dict) else {},
        response.status if response is not None else None,
        response.body if response is not None else None,
        cut.get(sent.response_ref) if sent.response_ref and cut else None,
        sent.network_error,
        sent.request_ref,
        sent.response_ref,
    )


def _long_bodies(workspace: Any) -> list[tuple[str, str]] | None:
    """(response ref, wire text) of every response whose preview was cut; None if a text is unknown."""
    found = []
    for sent in workspace.exchanges:
        if sent.response is None or not sent.response_ref:
            continue
        text = getattr(sent.response, "text", None)
        if text is None:
            return None
        if len(text) > PREVIEW_LIMIT:
            found.append((sent.response_ref, text))
    return found


def _no_read_and_exact_pairing(messages: list[dict[str, Any]]) -> bool:
    """True when no ``read`` was called and every turn's call ids are distinct (results pair exactly)."""
    for message in messages:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not isinstance(calls, list):
            continue
        ids: set[str] = set()
        for call in calls:
            if not isinstance(call, dict) or call.get("name") == "read":
                return False
            ident = call.get("id")
            if not isinstance(ident, str) or ident in ids:
                return False
            ids.add(ident)
    return True


def _cut_previews(workspace: Any, messages: list[dict[str, Any]]) -> dict[str, str]:
    """Response ref -> cut preview, for responses the agent saw only through a cut preview.

    Replaying the transcript (``cut_previews``) is exact but parses every tool result again.
    The workspace settles the common cases: with no body over the preview limit nothing was cut,
    and with no ``read`` call nothing cut was revealed later, so every long body stayed cut
    (its preview is the text's first ``PREVIEW_LIMIT`` characters and "…", as ``execute`` showed it).
    """
    long = _long_bodies(workspace)
    if long == []:
        return {}
    if long is None or not _no_read_and_exact_pairing(messages):
        return cut_previews(messages)
    return {ref: text[:PREVIEW_LIMIT] + _ELLIPSIS for ref, text in long}


_ABSTAINING = ("clarify", "report_blocked")


def _abstention(messages: list[dict[str, Any]]) -> tuple[Any, int]:
    """``abstention_in``, without replaying the result pairing when no call abstains.

    Pairing yields every call of every assistant turn exactly once, so the call count is the
    number of calls, and with no ``clarify``/``report_blocked`` call there is no abstention.
    """
    calls = 0
    for message in messages:
        listed = message.get("tool_calls") if message.get("role") == "assistant" else None
        if isinstance(listed, list):
            for call in listed:
                if isinstance(call, dict):
                    if call.get("name") in _ABSTAINING:
                        return abstention_in(messages)
                    calls += 1
    return None, calls


def evidence_from_workspace(workspace: Any, messages: Sequence[dict[str, Any]]) -> Evidence:
    """The evidence of a live trial.

    Args:
        workspace: The trial's ``apiflow.tools.Workspace`` after the loop ended.
        messages: The trial's schema-1.0 messages (final answer, abstention, tool-call count).

    Returns:
        Evidence whose response bodies are all known (nothing is ever unsettled); responses
        the agent saw only through a cut preview keep that preview (``strict-1.0`` ignores them).
    """
    messages = [m for m in messages if isinstance(m, dict)]
    cut = _cut_previews(workspace, messages)
    exchanges = tuple(_exchange(i, sent, cut) for i, sent in enumerate(workspace.exchanges))
    changed = set(workspace.changed_variables)
    variables = {(v[0], v[1]): v[2] for v in workspace.variables() if (v[0], v[1]) in changed}
    entities = {
        key: entity.content
        for key, entity in workspace.entities.items()
        if getattr(entity, "origin", "write") != "execute"
    }
    abstention, calls = _abstention(messages)
    text, reasoning = final_message(messages)
    return Evidence(
        exchanges=exchanges,
        variables=variables,
        entities=entities,
        answer_text=text,
        answer_reasoning=reasoning,
        abstention=abstention,
        ending=ending_of(messages, abstention, text),
        tool_call_count=calls,
        new_response_count=sum(1 for e in exchanges if e.has_response),
        new_variable_count=len(variables),
        task_text=task_text_of(messages),
    )
