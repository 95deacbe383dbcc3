"""The compiled form of a world: what it shares, what it still raises late, and its lifetime."""

from __future__ import annotations

import gc
import importlib
import json

import pytest

from apiflow.world import HttpRequest, WorldDef, WorldSession
from apiflow.world.features import Features
from apiflow.world.template import Constant, compile_template

compiled_module = importlib.import_module("apiflow.world.compiled")


def _features(**state: object) -> Features:
    return Features("GET", {"id": "p1"}, {}, {}, "none", None, {}, dict(state), 0)


def test_static_subtrees_are_shared_and_dynamic_ones_rendered() -> None:
    static = {"a": [1, {"b": "text"}], "c": None}
    assert isinstance(compile_template(static), Constant)
    template = {"static": static, "id": "{{path.id}}", "n": {"$len": "{{state.items}}"}}
    out = compile_template(template)(_features(items=[1, 2, 3]))
    assert out == {"static": static, "id": "p1", "n": 3}
    assert out["static"] is static  # returned as is, never copied
    assert list(out) == ["static", "id", "n"]  # key order kept (it is the JSON order)


def test_errors_are_still_raised_when_the_template_is_used() -> None:
    unknown = compile_template({"$nope": 1})  # compiling never fails
    with pytest.raises(ValueError, match="unknown template directive"):
        unknown(_features())
    bad_default = compile_template("{{state.missing ?? not-json}}")
    with pytest.raises(json.JSONDecodeError):
        bad_default(_features())
    assert compile_template("{{state.missing ?? [1]}}")(_features()) == [1]


def _world() -> WorldDef:
    return WorldDef.model_validate(
        {
            "id": "w",
            "title": "W",
            "routes": [
                {"method": "GET", "path": "/a/{x}", "rules": [{"respond": {"body": {"x": "{{path.x}}"}}}]},
                {"method": "GET", "path": "/b", "rules": [{"respond": {"body": {"fixed": [1, 2]}}}]},
            ],
        }
    )


def test_constant_bodies_carry_their_wire_text() -> None:
    session = WorldSession(_world(), 0)
    fixed = session.send(HttpRequest("GET", "/b"))
    assert fixed.text == json.dumps({"fixed": [1, 2]}) and fixed.headers["content-length"] == str(
        len(fixed.text)
    )
    assert session.send(HttpRequest("GET", "/a/q")).body == {"x": "q"}


def test_the_compiled_form_is_reused_and_leaves_with_its_world() -> None:
    world = _world()
    plan = compiled_module.compiled(world)
    assert compiled_module.compiled(world) is plan
    key = id(world)
    assert key in compiled_module._COMPILED
    del world, plan
    gc.collect()
    assert key not in compiled_module._COMPILED
