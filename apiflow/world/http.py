"""The world's input and output: one HTTP exchange, transport-free.

A world never sees sockets. ``execute`` turns the agent's request into an
``HttpRequest``; the world answers with an ``HttpResponse``. Serving a world
over real HTTP wraps the same pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apiflow.world.jsontext import dumps


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A request as the world sees it.

    Attributes:
        method: Upper-case HTTP method.
        url: The URL as the agent sent it (relative like ``/v3/fields?x=1`` or absolute).
        headers: Header names lower-cased, values as sent (strings).
        body: ``None``, parsed JSON (dict/list/scalar) when the agent passed an object, or the raw text.
    """

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """A response; ``body`` is parsed JSON or text, ``headers`` lower-cased.

    ``text`` is ``body_text(body)`` when it is already known (the transport serialised the
    body for ``content-length``, or the world's body is constant and was serialised once):
    consumers reuse it instead of re-encoding.
    """

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    text: str | None = field(default=None, compare=False)


def body_text(body: Any) -> str:
    """The text a client receives for a response body: raw text stays raw, JSON is ``json.dumps``."""
    if body is None:
        return ""
    if isinstance(body, str):
        return body
    return dumps(body)
