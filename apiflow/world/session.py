"""A world session: one trial's private, deterministic instance of a world.

The session holds the evolving state and a logical clock; the transport details a
client would see (``date``, ``server``, ``content-type``, ``content-length``) are
added here, so the dispatcher stays about API behaviour only.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

from apiflow.world.compiled import compiled
from apiflow.world.dispatch import dispatch
from apiflow.world.errors import TransportError
from apiflow.world.http import HttpRequest, HttpResponse, body_text
from apiflow.world.model import WorldDef


def _deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def http_date(moment: datetime) -> str:
    """``Mon, 29 Jun 2026 19:31:16 GMT`` (RFC 9110 IMF-fixdate) of a UTC time.

    Built by hand: HTTP names are English whatever the locale (``strftime``'s ``%a``/``%b``
    follow it), and it is cheaper, once per request.
    """
    return (
        f"{_WEEKDAYS[moment.weekday()]}, {moment.day:02d} {_MONTHS[moment.month - 1]} {moment.year:04d} "
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d} GMT"
    )


@functools.lru_cache(maxsize=4096)
def _date_after(clock: datetime, seconds: int) -> str:
    """``http_date`` of ``clock`` plus ``seconds``: every trial of a world asks for the same few."""
    return http_date(clock + timedelta(seconds=seconds))


class WorldSession:
    """One trial's world: ``send`` requests, read the spec; nothing leaks between sessions."""

    def __init__(self, world: WorldDef, seed: int, state_overrides: dict[str, Any] | None = None) -> None:
        self.world = world
        self.seed = seed
        self.state: dict[str, Any] = _deep_merge(world.state, state_overrides or {})
        self.live_netloc = f"127.0.0.1:{world.live_port}"
        self.requests_served = 0
        self._plan = compiled(world)  # looked up once per trial, not on every request
        # A frozen clock that ticks one second per request: `date` headers are stable across runs.
        self._clock = datetime.fromisoformat(world.clock_start.replace("Z", "+00:00")).astimezone(UTC)

    @property
    def server_url(self) -> str:
        """The spec's server URL (what the agent is told to call)."""
        return self.world.server

    def spec_content(self) -> dict[str, Any]:
        """Content of the ``spec:openapi`` entity (shared by every session of the world: read-only)."""
        return self._plan.spec_content

    def send(self, request: HttpRequest) -> HttpResponse:
        """Answer one request, advancing the session state."""
        for value in request.headers.values():
            if type(value) is not str and not isinstance(value, str):
                raise TransportError(f"Header value must be str or bytes, not {type(value)}", kind="invalid")
        outcome = dispatch(self.world, self.state, request, self.live_netloc, self.seed, self._plan)
        self.state = outcome.state
        self.requests_served += 1
        response = outcome.response
        body = response.body
        text = response.text if response.text is not None else body_text(body)
        # The transport's headers, as uvicorn sends them.
        headers = {
            "date": _date_after(self._clock, self.requests_served),
            "server": "uvicorn",
            "content-length": str(len(text) if text.isascii() else len(text.encode())),
        }
        if body is not None and type(body) is not str and not isinstance(body, str):
            headers["content-type"] = "application/json"
        elif text:
            headers["content-type"] = "text/plain; charset=utf-8"
        if outcome.route is not None and outcome.route.deprecated is not None:
            dep = outcome.route.deprecated
            headers["x-deprecated"] = "true"
            if dep.sunset:
                headers["sunset"] = dep.sunset
            if dep.superseded_by:
                headers["x-superseded-by"] = dep.superseded_by
            if dep.warning:
                headers["warning"] = dep.warning
        if response.headers:
            headers.update(response.headers)
        return HttpResponse(response.status, headers, response.body, text)
