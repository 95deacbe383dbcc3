"""``apiflow/sim:<profile>``: seeded simulated agents that stray from the golden path.

A profile gives independent per-axis probabilities. The whole script is drawn up front from one
``random.Random`` seeded from (seed, task id, profile) by sha256, so a trial replays exactly. The
deviation axes are applied per golden step, so longer chains collect more of them and fail more
often — the compounding the benchmark is about.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from apiflow.bank.task import GoldenCall, GoldenStep, Task
from apiflow.models.offline import PlannedCall, ScriptedModel, Turn, card_text


@dataclass(frozen=True, slots=True)
class SimProfile:
    """Per-axis deviation probabilities.

    Attributes:
        skip_step: Per golden step: leave it out.
        decoy: Per step that has a ``decoy``: take the decoy calls instead.
        ignore_retry: Per retry step (one that repeats an earlier execute's method and URL, such as
            re-sending a commit with a confirm flag): give up the retry and move on.
        malformed: Per call: send broken JSON arguments first, then repeat the call correctly.
        abstain: Per step: stop there with clarify or report_blocked.
        no_card: Per trial: finish without a card.
        wrong_value: Per card field: report a wrong value.
        missing_field: Per card field: leave the field out.
        empty_reply: Per trial: end with an empty message instead (``no_answer``; the failure
            mode of the published panel's weakest model, REFERENCE §6). Drawn last, so it
            changes nothing else about a trial.
    """

    skip_step: float
    decoy: float
    ignore_retry: float
    malformed: float
    abstain: float
    no_card: float
    wrong_value: float
    missing_field: float
    empty_reply: float = 0.0


PROFILES: dict[str, SimProfile] = {
    "ace": SimProfile(0.004, 0.02, 0.02, 0.02, 0.001, 0.005, 0.01, 0.005, 0.002),
    "strong": SimProfile(0.015, 0.06, 0.06, 0.04, 0.003, 0.02, 0.03, 0.01, 0.005),
    "steady": SimProfile(0.035, 0.12, 0.12, 0.06, 0.006, 0.04, 0.06, 0.02, 0.01),
    "erratic": SimProfile(0.07, 0.25, 0.25, 0.12, 0.012, 0.08, 0.10, 0.05, 0.02),
    "weak": SimProfile(0.12, 0.40, 0.40, 0.20, 0.025, 0.15, 0.16, 0.10, 0.04),
}
"""Named profiles, strongest first."""


def sim_rng(seed: int, task_id: str, profile: str) -> random.Random:
    """The simulation's only randomness, derived from content by sha256 (never ``hash()``)."""
    digest = hashlib.sha256(f"sim|{profile}|{task_id}|{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def wrong_value(value: Any, rng: random.Random) -> Any:
    """A plausible wrong value of the same type (what a confused agent reports)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + rng.choice((-2, -1, 1, 2))
    if isinstance(value, list):
        return value[:-1] if len(value) > 1 else [*value, "extra-item"]
    return f"{value}-stale" if value else "unknown"


def _card(task: Task, profile: SimProfile, rng: random.Random) -> dict[str, Any]:
    card: dict[str, Any] = {}
    for name, expected in task.expected_card.items():
        if rng.random() < profile.missing_field:
            continue
        card[name] = wrong_value(expected, rng) if rng.random() < profile.wrong_value else expected
    return card


def _call_key(call: GoldenCall) -> tuple[str, str] | None:
    request = call.arguments.get("request")
    if call.name != "execute" or not isinstance(request, dict):
        return None
    return (str(request.get("method", "GET")).upper(), str(request.get("url", "")).split("?")[0])


class _Planner:
    """Draws one sim script for one task; each method is one deviation axis."""

    def __init__(self, task: Task, profile: SimProfile, rng: random.Random) -> None:
        self.task, self.profile, self.rng = task, profile, rng
        self.turns: list[Turn] = []
        self.next_ref = 0
        self.sent: set[tuple[str, str]] = set()

    def _is_retry(self, step: GoldenStep) -> bool:
        return any(key in self.sent for key in map(_call_key, step.calls) if key is not None)

    def _choose_calls(self, step: GoldenStep, ref_base: int) -> list[PlannedCall]:
        """The calls this agent sends for a step (golden or decoy), refs mapped by position."""
        use_decoy = step.decoy is not None and self.rng.random() < self.profile.decoy
        chosen = step.decoy if use_decoy and step.decoy is not None else step.calls
        planned, slot = [], ref_base
        for call in chosen:
            ref_index = None
            if call.name == "execute":
                ref_index, slot = slot, slot + 1
            planned.append(PlannedCall(call, ref_index))
        return planned

    def _emit(self, planned: list[PlannedCall]) -> None:
        """One turn, with malformed calls first sent broken and then repeated in a follow-up turn."""
        broken = [self.rng.random() < self.profile.malformed for _ in planned]
        if any(broken):
            self.turns.append(
                Turn(tuple(PlannedCall(p.call, p.ref_index, b) for p, b in zip(planned, broken, strict=True)))
            )
            self.turns.append(Turn(tuple(p for p, b in zip(planned, broken, strict=True) if b)))
        else:
            self.turns.append(Turn(tuple(planned)))

    def _abstain(self) -> None:
        name, key = self.rng.choice((("clarify", "question"), ("report_blocked", "reason")))
        text = "The API does not behave as described and I cannot see a safe way to continue."
        self.turns.append(Turn((PlannedCall(GoldenCall(name=name, arguments={key: text})),)))

    def plan(self) -> list[Turn]:
        for step in self.task.golden:
            executes = sum(call.name == "execute" for call in step.calls)
            ref_base, self.next_ref = self.next_ref, self.next_ref + executes
            if self.rng.random() < self.profile.abstain:
                self._abstain()
                return self.turns
            retry = self._is_retry(step)
            self.sent.update(k for k in map(_call_key, step.calls) if k is not None)
            if self.rng.random() < self.profile.skip_step:
                continue
            if retry and self.rng.random() < self.profile.ignore_retry:
                continue
            self._emit(self._choose_calls(step, ref_base))
        if self.rng.random() < self.profile.no_card:
            self.turns.append(
                Turn(text="I went through the workflow; the results are in the responses above.")
            )
        else:
            self.turns.append(Turn(text=card_text(_card(self.task, self.profile, self.rng))))
        if self.rng.random() < self.profile.empty_reply:
            self.turns[-1] = Turn()
        return self.turns


def named_sim_model(task: Task, seed: int, profile_name: str) -> ScriptedModel:
    """``apiflow/sim:<profile>`` for one trial of ``task``.

    Args:
        task: The task whose golden solution the agent strays from.
        seed: The trial seed (runners derive it per task and epoch).
        profile_name: A key of ``PROFILES``.

    Raises:
        KeyError: Unknown profile (the registry turns it into a UsageError).
    """
    profile = PROFILES[profile_name]
    turns = _Planner(task, profile, sim_rng(seed, task.id, profile_name)).plan()
    return ScriptedModel(f"apiflow/sim:{profile_name}", turns)
