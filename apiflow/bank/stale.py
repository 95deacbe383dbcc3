"""What "stale" means for a task: the seeded value a first attempt sends where the golden retry sends
the live one.

The bank gates' stale-value sabotage and the stale-seed adversary must agree on it, so it is defined
once here, beside the task format both read.
"""

from __future__ import annotations

from typing import Any

from apiflow.bank.task import Task


def stale_pairs(task: Task) -> list[tuple[str, str]]:
    """``(live, stale)`` pairs: a seeded value a non-essential first attempt uses, and the live value the
    essential retry to the same method+URL puts in the same argument position."""
    seeds = {str(s.value) for s in task.seed if s.scope == "local" and isinstance(s.value, str)}
    tried: dict[tuple[str, str], dict[str, Any]] = {}
    pairs: list[tuple[str, str]] = []
    for step in task.golden:
        for call in step.calls:
            req = call.arguments.get("request") if call.name == "execute" else None
            if not isinstance(req, dict):
                continue
            key = (str(req.get("method")), str(req.get("url")))
            if not step.essential:
                tried[key] = req
            elif key in tried:
                before, after = _leaves(tried[key]), _leaves(req)
                for path, a in before.items():
                    b = after.get(path)
                    stale = next((s for s in seeds if s in a), None)
                    if b is None or a == b or stale is None:
                        continue
                    rest = a.replace(stale, "")
                    live = b.replace(rest, "") if rest and rest in b else b
                    if (live, stale) not in pairs:
                        pairs.append((live, stale))
    return pairs


def _leaves(value: Any, path: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        return {p: v for k in value for p, v in _leaves(value[k], f"{path}/{k}").items()}
    if isinstance(value, list):
        return {p: v for i, item in enumerate(value) for p, v in _leaves(item, f"{path}/{i}").items()}
    return {path: str(value)}
