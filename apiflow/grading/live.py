"""Evidence of a trial run by our own loop: straight from the workspace, full bodies known.

Duck-typed on the tools package's ``Workspace`` (``exchanges``, ``variables()``,
``changed_variables``, ``entities``) so grading does not import the tools.

Every trial is graded, so this is a hot path (issue 11 §1): the messages are walked once for
the call count, a possible abstention and the task text, and the exchanges once for the
``Exchange`` tuples, the response count and the bodies too long for a preview.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from apiflow.grading.answer import final_message
from apiflow.grading.evidence import Evidence, Exchange, user_texts
from apiflow.grading.transcript import PREVIEW_LIMIT, abstention_in, cut_previews, ending_of

_ELLIPSIS = "…"
_ABSTAINING = ("clarify", "report_blocked")


class _Exchanges(NamedTuple):
    """The workspace's exchanges as evidence, with what the same walk learnt on the way."""

    exchanges: list[Exchange]
    responses: int
    long: list[tuple[int, str]] | None
    """(position, wire text) of each response whose text is over ``PREVIEW_LIMIT``; ``None`` when
    some response's text is unknown (then only a transcript replay can tell what was cut)."""


def _exchanges(log: Sequence[Any]) -> _Exchanges:
    """``Exchange.sent`` of every workspace exchange (no preview yet: see ``_with_previews``)."""
    built: list[Exchange] = []
    responses = 0
    long: list[tuple[int, str]] | None = []
    for index, sent in enumerate(log):
        request = sent.request
        if type(request) is not dict and not isinstance(request, dict):
            request = {}
        response = sent.response
        status = body = None
        if response is not None:
            status, body = response.status, response.body
            if sent.response_ref and long is not None:
                text = getattr(response, "text", None)
                if text is None:
                    long = None
                elif len(text) > PREVIEW_LIMIT:
                    long.append((index, text))
        if status is not None:
            responses += 1
        built.append(
            Exchange.sent(
                index, request, status, body, None, sent.network_error, sent.request_ref, sent.response_ref
            )
        )
    return _Exchanges(built, responses, long)


def _with_previews(
    built: list[Exchange], long: list[tuple[int, str]] | None, messages: list[dict[str, Any]], plain: bool
) -> None:
    """Give each exchange the agent saw only through a cut preview that preview (in place).

    Replaying the transcript (``cut_previews``) is exact but parses every tool result again.
    The workspace settles the common cases: with no body over the preview limit nothing was cut,
    and with no ``read`` call nothing cut was revealed later, so every long body stayed cut
    (its preview is the text's first ``PREVIEW_LIMIT`` characters and "…", as ``execute`` showed it).
    """
    if long == []:
        return
    if long is not None and plain:
        for index, text in long:
            built[index] = built[index]._replace(preview=text[:PREVIEW_LIMIT] + _ELLIPSIS)
        return
    cut = cut_previews(messages)
    for index, exchange in enumerate(built):
        preview = cut.get(exchange.response_ref) if exchange.response_ref else None
        if preview is not None:
            built[index] = exchange._replace(preview=preview)


def _cut_previews(workspace: Any, messages: list[dict[str, Any]]) -> dict[str, str]:
    """Response ref -> cut preview, as ``evidence_from_workspace`` settles it (``cut_previews``'s equal)."""
    built, _, long = _exchanges(workspace.exchanges)
    _with_previews(built, long, messages, _calls(messages).plain)
    return {e.response_ref: e.preview for e in built if e.response_ref and e.preview is not None}


class _Calls(NamedTuple):
    """What one walk over the messages finds: see ``_calls``."""

    made: int
    abstaining: bool
    task_text: str
    plain: bool
    """No ``read`` call, and every turn's call ids distinct strings (then results pair with calls exactly)."""


def _calls(messages: list[dict[str, Any]]) -> _Calls:
    """The tool calls made, whether one of them is ``clarify``/``report_blocked``, the task text.

    The result pairing (``abstention_in``) yields every call of every assistant turn exactly once,
    so the count is the number of calls; with no abstaining call there is no abstention, and
    the pairing replay is needed only when there is one.
    """
    count = 0
    abstaining = False
    plain = True
    texts: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            listed = message.get("tool_calls")
            if isinstance(listed, list):
                ids: set[str] = set()
                for call in listed:
                    if type(call) is dict or isinstance(call, dict):
                        count += 1
                        name = call.get("name")
                        if name in _ABSTAINING:
                            abstaining = True
                        elif name == "read":
                            plain = False
                        if plain:
                            ident = call.get("id")
                            if type(ident) is not str and not isinstance(ident, str) or ident in ids:
                                plain = False
                            else:
                                ids.add(ident)
                    else:
                        plain = False
        elif role == "user":
            user_texts(message.get("content"), texts)
    return _Calls(count, abstaining, "\n".join(texts), plain)


def evidence_from_workspace(workspace: Any, messages: Sequence[dict[str, Any]]) -> Evidence:
    """The evidence of a live trial.

    Args:
        workspace: The trial's ``apiflow.tools.Workspace`` after the loop ended.
        messages: The trial's schema-1.0 messages (final answer, abstention, tool-call count).

    Returns:
        Evidence whose response bodies are all known (nothing is ever unsettled); responses
        the agent saw only through a cut preview keep that preview (``strict-1.0`` ignores them).
    """
    messages = [m for m in messages if type(m) is dict or isinstance(m, dict)]
    calls, abstaining, task_text, plain = _calls(messages)
    built, responses, long = _exchanges(workspace.exchanges)
    _with_previews(built, long, messages, plain)
    changed = workspace.changed_variables
    variables = {
        (scope, name): value for scope, name, value in workspace.variables() if (scope, name) in changed
    }
    entities = {
        key: entity.content
        for key, entity in workspace.entities.items()
        if getattr(entity, "origin", "write") != "execute"
    }
    abstention = abstention_in(messages)[0] if abstaining else None
    text, reasoning = final_message(messages)
    return Evidence(
        exchanges=tuple(built),
        variables=variables,
        entities=entities,
        answer_text=text,
        answer_reasoning=reasoning,
        abstention=abstention,
        ending=ending_of(messages, abstention, text),
        tool_call_count=calls,
        new_response_count=responses,
        new_variable_count=len(variables),
        task_text=task_text,
    )
