"""Extending a grid whose results are stored: more epochs, models or tasks in the same folder.

A trial's id depends on its bank, task, model, epoch, seed and limits, never on the grid around
it, so a grid that plans every trial the stored grid planned (and more) can reuse each stored trial
as it is: only the new ones run. ``grid run --extend`` asks for that; without it a changed grid is
refused, so an edited YAML never mixes into an old folder by accident. The stored manifest is kept
under ``manifests/`` and the new one names the grids it extends (docs/design/047).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from apiflow.bank import Bank
from apiflow.errors import UsageError
from cluster.plan import plan_grid
from cluster.spec import GridSpec

EXTENDS = "extends"
"""The manifest field listing the grid ids a grid extends, most recent first."""


def what_changed(stored: dict[str, Any], spec: GridSpec) -> str:
    """The identity fields in which ``spec`` differs from the stored grid, said briefly."""
    before = stored.get("grid") or {}
    now = spec.model_dump(mode="json")
    said = []
    if before.get("epochs") != now["epochs"]:
        said.append(f"epochs {before.get('epochs')} -> {now['epochs']}")
    old_models = [m.get("model") for m in before.get("models", [])]
    new_models = [m["model"] for m in now["models"]]
    if added := [m for m in new_models if m not in old_models]:
        said.append(f"models added: {', '.join(added)}")
    if dropped := [m for m in old_models if m not in new_models]:
        said.append(f"models dropped: {', '.join(str(m) for m in dropped)}")
    for name in ("tasks", "seed", "limits"):
        if before.get(name) != now[name]:
            said.append(f"{name} differ")
    return "; ".join(said) or "its identity differs"


def extension_gap(stored: dict[str, Any], bank: Bank, planned: set[str]) -> str | None:
    """Why a grid planning ``planned`` does not extend the stored grid, or None when it does.

    It does when the bank is the same and its plan holds every trial the stored grid planned.
    """
    stored_bank = (stored.get("bank") or {}).get("hash")
    if stored_bank != bank.hash:
        return f"its bank differs ({str(stored_bank)[:12]} stored, {bank.hash[:12]} now)"
    try:
        before = GridSpec.model_validate(stored["grid"])
        old = {t.trial_id for t in plan_grid(before, bank)}
    except (KeyError, TypeError, ValidationError, UsageError, OSError) as exc:
        return f"the stored grid cannot be planned again ({type(exc).__name__}: {exc})"
    left_out = old - planned
    if left_out:
        return (
            f"{len(left_out)} of the {len(old)} trials it planned are not in this grid "
            "(a model, task or epoch removed, or the seed or limits changed)"
        )
    return None


def check_extension(
    stored: dict[str, Any], spec: GridSpec, bank: Bank, planned: set[str], *, extend: bool, url: str
) -> None:
    """Refuse a grid that differs from the one ``url`` holds, unless it extends it and ``extend`` says so.

    Raises:
        UsageError: One line: what differs and what to do.
    """
    changed = what_changed(stored, spec)
    if not extend:
        raise UsageError(
            f"{url} already holds results of another grid ({changed}); if this grid only adds epochs, "
            "models or tasks, rerun with --extend to run just the new trials beside the stored ones; "
            "otherwise choose another --out"
        )
    gap = extension_gap(stored, bank, planned)
    if gap is not None:
        raise UsageError(f"{url}: this grid does not extend the one stored there: {gap}; choose another --out")


def extended_manifest(manifest: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """The new grid's manifest, naming every grid it extends (most recent first)."""
    return {**manifest, EXTENDS: [stored["grid_id"], *stored.get(EXTENDS, [])]}
