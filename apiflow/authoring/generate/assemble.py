"""Turn drafts into bank data: world files, solo task files and chain files."""

from __future__ import annotations

import copy
import random
import re
from typing import Any

from apiflow.authoring.generate.draft import Draft, Step, World, mint_call, url_re
from apiflow.authoring.generate.init import auth_responses
from apiflow.authoring.generate.routes import RouteBook
from apiflow.authoring.generate.wording import card_phrase, pick


def world_data(world: World, book: RouteBook, state: dict[str, Any]) -> dict[str, Any]:
    """The WorldDef document."""
    dom = world.dom
    return {
        "id": world.wid,
        "title": f"{dom.company} — {dom.blurb} API",
        "server": "http://localhost:9001",
        "live_port": 48000 + int(world.wid[1:]) * 17,
        "state": copy.deepcopy(state),
        "auth": auth_responses(world),
        "routes": book.routes(),
    }


def with_mint(draft: Draft, world: World, first: bool) -> tuple[list[Step], list[dict[str, Any]]]:
    """Steps and G1 predicates, with the token mint prepended on a storyline's first step."""
    steps, g1 = list(draft.steps), list(draft.g1)
    has_mint = any(
        c["arguments"].get("request", {}).get("url") == world.mint_path for s in steps for c in s.calls
    )
    if first and not has_mint:
        steps.insert(0, Step([mint_call(world)]))
        g1.insert(
            0,
            {
                "kind": "data_flow",
                "from_response_url_pattern": url_re(world.mint_path),
                "from_body_key": "access_token",
                "from_status": 200,
                "must_be_stored": False,
                "used_in_request_url_pattern": re.escape(
                    f"{world.dom.tenant.plural}/{world.dom.tenant_value}"
                ),
                "explain": "The token must be minted in this trial from the vault credentials.",
                "prompt_quote": "client credentials",
            },
        )
    return steps, g1


def solo_data(
    bank: str,
    world: World,
    k: int,
    axis: str,
    difficulty: str,
    draft: Draft,
    seed: dict[tuple[str, str], Any],
    world_state: dict[str, Any],
) -> dict[str, Any]:
    """The solo task document."""
    steps, g1 = with_mint(draft, world, k == 1)
    prompt = draft.prompt
    if k == 1 and "vault" not in prompt:
        prompt += " The client credentials are in the vault."
    data: dict[str, Any] = {
        "id": f"{bank}-{world.wid}-sub{k:02d}",
        "world": world.wid,
        "kind": "solo",
        "length": k,
        "axis": axis,
        "difficulty": difficulty,
        "prompt": prompt,
        "card_fields": [c.field for c in draft.card],
        "seed": [{"scope": s, "name": n, "value": v} for (s, n), v in seed.items()],
        "predicates": [
            {
                "kind": "answer_schema",
                "field": c.field,
                "expected": c.expected,
                "comparator": c.comparator,
                "explain": c.explain,
                "prompt_quote": c.quote,
            }
            for c in draft.card
        ]
        + g1,
        "checkpoints": draft.checkpoints,
        "constraints": draft.constraints,
        "golden": [s.as_data() for s in steps],
    }
    if world_state:
        data["world_state"] = world_state
    return data


CHAIN_OPENERS = (
    "Starting from nothing but the client credentials in the vault, ",
    "Using only my vault credentials, ",
    "Fresh session, vault credentials only: ",
    "End to end, from a cold start with the vault credentials: ",
    "I need the whole workflow done from scratch (credentials are in the vault): ",
)
JOINERS = ("; then ", ", then ", "; after that ", "; next ", ", and then ")


def chain_prompt(rng: random.Random, drafts: list[Draft], bank: str, wid: str, k: int) -> dict[str, Any]:
    """A chain file: one paragraph compressing steps 1..K into one goal."""
    goals = [drafts[0].goal]
    for before, draft in zip(drafts, drafts[1:], strict=False):
        # Later steps name the entity the previous step produced by role, never by its minted id.
        goals.append(
            draft.goal.replace(before.output.value, f"that {before.output.res.singular.replace('-', ' ')}")
        )
    text = pick(rng, *CHAIN_OPENERS) + goals[0]
    for goal in goals[1:]:
        text += rng.choice(JOINERS) + goal
    asks = [c.quote for c in drafts[-1].card]
    text += (
        ". "
        + pick(rng, "Report ", "At the end give me ", "Finally tell me ", "What I need back: ")
        + card_phrase(asks)
        + " from the last step."
    )
    return {
        "id": f"{bank}-{wid}-chain-1to{k:02d}",
        "world": wid,
        "kind": "chain",
        "length": k,
        "prompt": text,
    }
