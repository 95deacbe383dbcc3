"""Initialise a world once: identity, credentials, token routes and auth answers."""

from __future__ import annotations

import random
from typing import Any

from apiflow.authoring.generate.domains import Domain
from apiflow.authoring.generate.draft import Output, World
from apiflow.authoring.generate.routes import RouteBook, any_, eq, not_, rule
from apiflow.authoring.generate.values import Minter


def grant_error() -> dict[str, str]:
    """The token route's answer to a wrong grant type."""
    return {
        "error": "unsupported_grant_type",
        "hint": "use grant_type=client_credentials with your client_id and client_secret (JSON or form body)",
    }


def scope_error(mint_path: str, scope: str) -> dict[str, str]:
    """The answer of a route that needs the elevated scope."""
    return {
        "error": "insufficient_scope",
        "hint": f"this route needs scope '{scope}'; re-mint at POST {mint_path} with scope '{scope}'",
    }


def _minted(token: str, scopes: list[str]) -> dict[str, Any]:
    return {"access_token": token, "token_type": "Bearer", "expires_in": 900, "scope": " ".join(scopes)}


def _token_routes(world: World, book: RouteBook) -> None:
    """The client-credentials mint (grant and client checks, elevated scope on request) and the legacy v1 mint."""
    elevated = [*world.base_scopes, world.dom.elevated_scope]
    wrong_client = any_({"at": "body.client_id", "ne": world.client_id},
                        {"at": "body.client_secret", "ne": world.client_secret})
    book.add("POST", world.mint_path, "Mint an access token (client credentials)", [
        rule("bad-grant", [not_(eq("body.grant_type", "client_credentials"))], 400, grant_error()),
        rule("bad-client", [wrong_client], 401, {
            "error": "invalid_client", "hint": "client_id/client_secret do not match a registered client (see the vault)"}),
        rule("elevated", [{"at": "body.scope", "matches": world.dom.elevated_scope}], 200,
             _minted(world.elevated_token, elevated),
             do=[{"mint_token": {"value": world.elevated_token, "scopes": elevated}}]),
        rule("default", [], 200, _minted(world.token, world.base_scopes),
             do=[{"mint_token": {"value": world.token, "scopes": world.base_scopes}}]),
    ], bearer=False)
    legacy = {"value": world.legacy_token, "scopes": world.base_scopes[:1], "legacy": True}
    book.add("POST", "/v1/oauth/token", "DEPRECATED legacy token mint", [
        rule("legacy", [], 200, {"token": world.legacy_token, "type": "legacy"}, do=[{"mint_token": legacy}]),
    ], bearer=False, deprecated={"sunset": "2025-03-31", "superseded_by": world.mint_path})


def init_world(wid: str, dom: Domain, rng: random.Random, mint: Minter, book: RouteBook) -> World:
    """Credentials, the token routes (v3 or v2 mint + a deprecated v1 mint) and the world's identity."""
    version = rng.choice(("v3", "v3", "v2"))
    world = World(
        wid=wid, dom=dom, mint_path=f"/{version}/oauth/token",
        client_id=f"cid_{dom.stem}_{rng.randrange(10, 99)}", client_secret=f"csec_{rng.getrandbits(40):010x}",
        token=mint.token(dom.stem), elevated_token=mint.token(f"{dom.stem}x"),
        legacy_token=f"tk_{dom.stem}_legacy_v1", base_scopes=[f"{dom.stem}:read", f"{dom.stem}:write"],
    )
    _token_routes(world, book)
    return world


def auth_responses(world: World) -> dict[str, Any]:
    """The world's answers to a failed bearer check."""
    mint = f"POST {world.mint_path}"
    return {
        "missing": {
            "status": 401,
            "body": {
                "error": "missing_token",
                "hint": f"send Authorization: Bearer <token> minted at {mint}",
            },
        },
        "invalid": {
            "status": 401,
            "body": {
                "error": "invalid_token",
                "hint": f"this token is not recognised; mint a fresh one at {mint}",
            },
        },
        "legacy": {
            "status": 401,
            "body": {
                "error": "legacy_token_rejected",
                "hint": f"v1 tokens are not accepted here; mint one at {mint}",
            },
        },
        "expired": {
            "status": 401,
            "body": {
                "error": "token_expired",
                "hint": f"this token went stale after repeated use; mint a fresh one at {mint}",
            },
        },
        "insufficient_scope": {"status": 403, "body": scope_error(world.mint_path, world.dom.elevated_scope)},
    }


def root(dom: Domain) -> Output:
    """The tenant entity every first step works under (always present, in the vault)."""
    return Output(dom.tenant_value, dom.tenant, "")


def vault(world: World) -> dict[str, str]:
    """Vault variables of every task of the world."""
    dom = world.dom
    return {
        "client_id": world.client_id,
        "client_secret": world.client_secret,
        dom.tenant.id_field: dom.tenant_value,
        dom.region_var: dom.region_value,
    }
