"""The seven capability axes; each drafts one subtask into a growing world."""

from collections.abc import Callable

from apiflow.authoring.generate.axes import auth, discovery, multistep, paging, recovery, schema, state
from apiflow.authoring.generate.draft import Ctx, Draft

AXES: dict[str, Callable[[Ctx], Draft]] = {
    "authentication": auth.draft,
    "discovery": discovery.draft,
    "schema_repair": schema.draft,
    "multistep": multistep.draft,
    "error_recovery": recovery.draft,
    "pagination": paging.draft,
    "statefulness": state.draft,
}
"""Axis name -> drafting function."""

__all__ = ["AXES"]
