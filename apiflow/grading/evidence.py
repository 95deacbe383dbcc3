"""The evidence a trial leaves behind: what the grader is allowed to look at.

Evidence is built either from our own trial loop (full response bodies known) or
rebuilt from a published schema-1.0 transcript, where a response seen only through a
cut ``body_preview`` and never ``read`` has an *unknown* body. Predicates treat an
unknown body as "cannot tell", never as absent (docs/design/010-grading-rules.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple

Ending = Literal["answered", "no_answer", "clarify", "report_blocked", "limit"]
AbstentionKind = Literal["clarify", "report_blocked"]


class _Unknown:
    """Marker for a response body the evidence does not contain (cut preview, never read)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "unknown"

    def __reduce__(self) -> str:
        return "UNKNOWN"  # pickles back to the module singleton (process pools)


UNKNOWN: Final = _Unknown()
"""The body of a response only seen through a truncated preview."""


def request_text(url: str, headers: Any, body: Any) -> str:
    """The searchable text of a request: URL as sent, then headers, then body.

    Values re-used from a response are looked for as substrings of this text, so a
    token in an ``Authorization`` header counts as well as an id in the JSON body.
    """
    parts = [url]
    if headers:
        parts.append(headers if isinstance(headers, str) else _dumps(headers))
    if body is not None:
        parts.append(body if isinstance(body, str) else _dumps(body))
    return "\n".join(parts)


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


_tuple_new = tuple.__new__


class Exchange(NamedTuple):
    """One request the agent sent in this trial, and what came back.

    A NamedTuple rather than a frozen dataclass: a trial builds one per request (a regrade one per
    replayed execute), and a tuple is built in one step where the dataclass set each field through
    ``object.__setattr__`` (docs/results/010-grading-rules-measurements.md, "Round four").

    Attributes:
        index: Position in send order (0-based); "later" means a larger index.
        method: Upper-case method as sent (``GET`` when the agent gave none).
        url: The URL exactly as sent (relative or absolute).
        headers: Request headers as sent.
        body: Request body as sent (object, raw text or ``None``).
        status: Response status, ``None`` on a network error.
        response_body: Parsed JSON or text; ``UNKNOWN`` when only a cut preview was seen.
        preview: The cut preview, when that is all the agent ever saw of the body (it never
            ``read`` the response); ``None`` when it saw the whole body. In a regraded
            transcript this is exactly when ``response_body`` is ``UNKNOWN``.
        network_error: The transport error text when no response came back.
        request_ref: The request entity ref (``request:req-…``).
        response_ref: The response entity ref, ``None`` on a network error.
    """

    index: int  # type: ignore[assignment]  # shadows tuple.index: the field is older than the tuple
    method: str
    url: str
    headers: Any
    body: Any
    status: int | None
    response_body: Any
    preview: str | None = None
    network_error: str | None = None
    request_ref: str = ""
    response_ref: str | None = None

    @property
    def text(self) -> str:
        """Searchable text: URL + headers + body (see ``request_text``); built on demand."""
        return request_text(self.url, self.headers, self.body)

    @property
    def has_response(self) -> bool:
        """True when an HTTP response (any status) came back."""
        return self.status is not None

    @classmethod
    def sent(
        cls,
        index: int,
        request: Mapping[str, Any],
        status: int | None,
        response_body: Any,
        preview: str | None = None,
        network_error: str | None = None,
        request_ref: str = "",
        response_ref: str | None = None,
    ) -> Exchange:
        """An exchange from request content as the agent sent it, plus what came back.

        The one place request content is normalised for grading: the method upper-cased
        (``GET`` when missing or not a string), a non-string URL read as ``""``. Live grading
        and the transcript replay call it once per exchange, positionally (the hot path): the
        tuple is made by ``tuple.__new__`` straight, without the NamedTuple's Python ``__new__``.
        """
        method, url = request.get("method"), request.get("url")
        return _tuple_new(
            cls,
            (
                index,
                method.upper() if isinstance(method, str) else "GET",
                url if isinstance(url, str) else "",
                request.get("headers"),
                request.get("body"),
                status,
                response_body,
                preview,
                network_error,
                request_ref,
                response_ref,
            ),
        )

    @property
    def body_known(self) -> bool:
        """True when the full response body is part of the evidence."""
        return self.response_body is not UNKNOWN


@dataclass(frozen=True, slots=True)
class Abstention:
    """The agent gave up through ``clarify`` or ``report_blocked``."""

    kind: AbstentionKind
    reason: str


@dataclass(frozen=True, slots=True)
class Evidence:
    """Everything grading may use about one trial.

    Attributes:
        exchanges: Requests sent in this trial, in send order.
        variables: Final value of every variable the agent wrote, by ``(scope, name)``.
        entities: Final content of request/handle entities the agent wrote (``kind:id``).
        answer_text: Text of the last assistant message with non-empty text or reasoning.
        answer_reasoning: Reasoning of that same message.
        abstention: Set when the agent called ``clarify``/``report_blocked`` and got a result.
        ending: How the trial ended.
        tool_call_count: Tool calls the agent made.
        new_response_count: Responses obtained (HTTP answers, any status).
        new_variable_count: Distinct variables written.
        task_text: The user messages' text: what the task itself told the agent (a value
            found there needs no response to have carried it, ``apiflow.grading.provenance``).
    """

    exchanges: tuple[Exchange, ...] = ()
    variables: Mapping[tuple[str, str], Any] = field(default_factory=dict)
    entities: Mapping[str, Any] = field(default_factory=dict)
    answer_text: str = ""
    answer_reasoning: str = ""
    abstention: Abstention | None = None
    ending: Ending = "no_answer"
    tool_call_count: int = 0
    new_response_count: int = 0
    new_variable_count: int = 0
    task_text: str = ""

    @property
    def abstained(self) -> str | None:
        """``"clarify"``/``"report_blocked"`` when the agent abstained, else ``None``."""
        return self.abstention.kind if self.abstention else None


def value_text(value: Any) -> str:
    """A variable value or extracted leaf as the text substring tests run on."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return _dumps(value)


def task_text_of(messages: Any) -> str:
    """The text of every user message, joined (string contents and text blocks)."""
    parts: list[str] = []
    for message in messages if isinstance(messages, list) else ():
        # ``type(...) is dict`` first: the ABC check is ten times dearer and nearly every message is one.
        if not (type(message) is dict or isinstance(message, Mapping)) or message.get("role") != "user":
            continue
        user_texts(message.get("content"), parts)
    return "\n".join(parts)


def user_texts(content: Any, parts: list[str]) -> None:
    """Append the text of one user message's ``content`` (a string, or its text blocks) to ``parts``."""
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts += [b["text"] for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
