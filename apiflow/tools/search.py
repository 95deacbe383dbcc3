"""``search``: find entities and variables by a case-insensitive substring.

Semantics read off the published transcripts (REFERENCE §2.4):
* the query is one whole string, never split into words (``"oauth token"`` finds nothing
  when no entity holds that exact phrase; ``"a OR b"`` is literal);
* an entity matches when the query occurs in its ref string or its JSON content
  (``"resp-"`` lists every response; ``"client"`` hits the spec);
* a variable matches by name only;
* case is ignored (``"SIN"`` found a spec that only says ``sin``);
* ``""`` matches everything; ``kind`` null or ``""`` means every kind;
* order: the spec, then requests/responses/handles in creation order, then variables
  (vault, local, global);
* at most 50 entity hits (the first 50 in that order; seen in a replayed transcript where the
  51st item was a variable after exactly 50 entities). Variables are capped at 50 too — that
  cap is ours, no published search listed that many.
"""

from __future__ import annotations

import json
from typing import Any

from apiflow.tools.workspace import Entity, Workspace

ENTITY_HIT_LIMIT = 50
VARIABLE_HIT_LIMIT = 50


def _entity_text(entity: Entity) -> str:
    # ensure_ascii=False so a query with non-ASCII text can match what the model read.
    if entity.search_text is None:
        entity.search_text = f"{entity.ref}\n{json.dumps(entity.content, ensure_ascii=False)}".lower()
    return entity.search_text


def search_workspace(workspace: Workspace, query: str, kind: str | None) -> list[Any]:
    """Matching refs (strings) and variables (``{kind, id, scope}`` objects), in published order."""
    needle = query.lower()
    hits: list[Any] = []
    if kind != "variable":
        for entity in workspace.all_entities():
            if kind and entity.ref.kind != kind:
                continue
            if len(hits) == ENTITY_HIT_LIMIT:
                break
            if needle in _entity_text(entity):
                hits.append(str(entity.ref))
    if not kind or kind == "variable":
        variables = [v for v in workspace.variables() if needle in v.name.lower()]
        hits += [{"kind": "variable", "id": v.name, "scope": v.scope} for v in variables[:VARIABLE_HIT_LIMIT]]
    return hits
