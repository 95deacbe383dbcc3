"""The route index finds exactly the routes a scan of every route would, in declaration order.

``compiled.RouteIndex`` files routes by segment count and literal leading segments
(docs/results/030-agent-loop-rounds.md, "Trial cost, round two"); this checks it against trying every route, for
paths built from every route template of the bank worlds (parameters filled in, literals
swapped for parameters' values, trailing slashes, other counts).
"""

from __future__ import annotations

import re

import pytest

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.world.compiled import CompiledRoute, _route_index, compiled
from apiflow.world.model import Route

_PARAM = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def _every_route(plan: object) -> list[CompiledRoute]:
    index = plan.routes  # type: ignore[attr-defined]
    entries = [e for group in index.exact.values() for e in group] + [
        e for group in index.wild.values() for e in group
    ]
    return [route for _, route in sorted(entries, key=lambda entry: entry[0])]


def _paths(templates: list[str]) -> set[str]:
    paths = {"/", "", "/x", "//", "/v3/", "relative/path"}
    segments = sorted({s for t in templates for s in t.split("/") if s and "{" not in s})
    for template in templates:
        filled = _PARAM.sub("p-1", template)
        paths.update({filled, filled + "/", filled + "/extra", filled.rsplit("/", 1)[0]})
        parts = template.split("/")
        for i, part in enumerate(parts):
            if part and "{" not in part:
                # a parameter's value that happens to equal another route's literal
                for other in segments[:3]:
                    paths.add(_PARAM.sub("p-1", "/".join([*parts[:i], other, *parts[i + 1 :]])))
            elif "{" in part:
                for literal in segments[:3]:
                    paths.add(_PARAM.sub("p-1", "/".join([*parts[:i], literal, *parts[i + 1 :]])))
    return paths


@pytest.mark.parametrize(
    "bank_dir",
    [DEFAULT_BANK, pytest.param(DEFAULT_BANK.parent / "v1", marks=pytest.mark.slow)],
    ids=["sample", "v1"],
)
def test_index_matches_a_scan_of_every_route(bank_dir: object) -> None:
    bank = load_bank(bank_dir)  # type: ignore[arg-type]
    worlds = {id(bank.world_of(t)): bank.world_of(t) for t in bank.tasks.values()}
    checked = 0
    for world in worlds.values():
        plan = compiled(world)
        every = _every_route(plan)
        assert [r.route for r in every] == list(world.routes)  # the index lost or reordered nothing
        for path in _paths([r.path for r in world.routes]):
            scanned = [(r, p) for r in every if (p := r.match(path)) is not None]
            assert plan.match_routes(path) == scanned, path
            checked += 1
    assert checked > 100


def test_routes_with_a_parameter_up_front_keep_declaration_order() -> None:
    # The bank worlds put no parameter in the first two segments, so the wild list and the
    # ordered merge are checked on routes made for it.
    templates = ["/v3/{a}/x", "/v3/items/x", "/{b}/items/x", "/v3/items/{c}", "/{d}", "/v3", "/v3/items", "/"]
    routes = [
        Route.model_validate(
            {"method": "GET", "path": p, "rules": [{"respond": {"status": 200, "body": {}}}]}
        )
        for p in templates
    ]
    index = _route_index(routes)
    every = [
        route
        for _, route in sorted(
            [e for g in index.exact.values() for e in g] + [e for g in index.wild.values() for e in g],
            key=lambda e: e[0],
        )
    ]
    assert [r.route.path for r in every] == templates
    assert [r.route.path for r in index.candidates("/v3/items/x")] == [
        "/v3/{a}/x",
        "/v3/items/x",
        "/{b}/items/x",
        "/v3/items/{c}",
    ]
    for path in _paths(templates) | {"/v3/items/x", "/v2/items/x", "/v3/other/x", "/v3", "/anything"}:
        expected = [r for r in every if r.match(path) is not None]
        assert [r for r in index.candidates(path) if r.match(path) is not None] == expected, path
