"""Pure, deterministic mock API worlds defined as data.

Nothing under this package reads the wall clock, global randomness or the network;
``tests/world/test_purity.py`` keeps it so.
"""

from apiflow.world.dispatch import dispatch
from apiflow.world.errors import TransportError, WorldDefinitionError
from apiflow.world.http import HttpRequest, HttpResponse, body_text
from apiflow.world.model import Condition, Effect, ResponseSpec, Route, Rule, TokenGrant, WorldDef
from apiflow.world.session import WorldSession
from apiflow.world.spec import openapi_document, spec_content

__all__ = [
    "Condition",
    "Effect",
    "HttpRequest",
    "HttpResponse",
    "ResponseSpec",
    "Route",
    "Rule",
    "TokenGrant",
    "TransportError",
    "WorldDefinitionError",
    "WorldDef",
    "WorldSession",
    "body_text",
    "dispatch",
    "openapi_document",
    "spec_content",
]
