"""The published spec of a world: OpenAPI 3.1 paths with summary and security only.

Fields, headers and pagination are deliberately absent: the agent discovers them live.
"""

from __future__ import annotations

from typing import Any

from apiflow.world.model import WorldDef


def openapi_document(world: WorldDef) -> dict[str, Any]:
    """The OpenAPI document served at ``/openapi.json`` and held by ``spec:openapi``."""
    paths: dict[str, dict[str, Any]] = {}
    if world.serve_openapi:
        paths["/openapi.json"] = {"get": {"summary": "This document", "security": []}}
    for route in world.routes:
        if not route.in_spec:
            continue
        security: list[dict[str, list[str]]] = [{"bearer": []}] if route.auth is not None else [{"none": []}]
        op = {"summary": route.summary, "security": security}
        paths.setdefault(route.path, {})[route.method.lower()] = op
    for path, ops in world.spec_extra_paths.items():
        paths.setdefault(path, {}).update(ops)
    return {
        "openapi": "3.1.0",
        "info": {"title": world.title, "version": "1.0.0"},
        "servers": [{"url": world.server}],
        "paths": paths,
    }


def spec_content(world: WorldDef) -> dict[str, Any]:
    """The content of the ``spec:openapi`` workspace entity."""
    return {
        "format": "openapi-3.1",
        "title": world.title,
        "served_at": "/openapi.json",
        "description": (
            f"OpenAPI 3.1 document for the {world.title}, inlined below. Every path is relative to the "
            "same host; send requests with execute()."
        ),
        "document": openapi_document(world),
    }
