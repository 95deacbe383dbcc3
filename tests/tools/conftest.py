"""Shared fixtures: a fresh workspace over the fake world, and its toolbox."""

from __future__ import annotations

import pytest

from apiflow.tools import Toolbox, Workspace

from .fakes import SPEC_CONTENT, FakeWorld, Seed


@pytest.fixture
def world() -> FakeWorld:
    return FakeWorld()


@pytest.fixture
def workspace() -> Workspace:
    seeds = [
        Seed("vault", "client_id", "cid_quill_7"),
        Seed("vault", "client_secret", "csec_quill_b2"),
        Seed("local", "access_token", "tk_stale_0001"),
        Seed("global", "region", "eu-west"),
    ]
    return Workspace(seeds, SPEC_CONTENT, id_seed=1234)


@pytest.fixture
def toolbox(workspace: Workspace, world: FakeWorld) -> Toolbox:
    return Toolbox(workspace, world.send)
