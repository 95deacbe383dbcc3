"""``apiflow/adv:<name>``: cheating agents that read the released answer key and skip the labour.

Each adversary is an ordinary ``ModelClient`` (a ``ScriptedModel``) whose script is the golden
solution with some labour cut out or corrupted (``families``). They exist to be graded: a
task is sound only if every one of them fails it (``apiflow bank audit``, docs/design/011).
Scripts are drawn up front from one ``random.Random`` seeded from (adversary, task id, seed)
by sha256, so a trial replays exactly, like the sims. The harness's adversaries (``apiflow/hostile:``,
agent code that attacks the harness rather than the grader) are in ``hostile``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from apiflow.bank.task import Task
from apiflow.models.adversarial import families as f
from apiflow.models.offline import ScriptedModel, Turn

ADV_PREFIX = "apiflow/adv:"


@dataclass(frozen=True, slots=True)
class Adversary:
    """One cheat.

    Attributes:
        name: ``apiflow/adv:<name>``.
        family: The exploit family of issue 9 §1 it belongs to.
        plan: Draws the script for a task, ``None`` when the task offers nothing to cheat with.
        judged: False for an informational probe whose passes measure work the task's contract
            leaves ungraded (the audit reports them; they do not fail it).
    """

    name: str
    family: str
    plan: Callable[[Task, random.Random], list[Turn] | None]
    judged: bool = True

    @property
    def labour(self) -> str:
        """What the adversary leaves undone (its planner's docstring, first sentence)."""
        return (self.plan.__doc__ or "").split(".")[0].replace("\n", " ")


ADVERSARIES: dict[str, Adversary] = {
    a.name: a
    for a in (
        Adversary("answer-key", "answer-key replay", f.answer_key),
        Adversary("replay", "answer-key replay", f.replay),
        Adversary("epoch-replay", "answer-key replay", f.replay),
        Adversary("premature", "answer-key replay", f.premature),
        Adversary("skip-step", "skipped steps", f.skip_step),
        Adversary("last-segment", "skipped steps", f.last_segment),
        Adversary("skip-middle", "skipped steps", f.skip_middle, judged=False),
        Adversary("decoy-then-real", "decoy / legacy route", f.decoy_then_real),
        Adversary("forbidden-route", "decoy / legacy route", f.forbidden_route),
        Adversary("smuggled-route", "decoy / legacy route", f.smuggled_route),
        Adversary("wrong-entity", "wrong entity", f.wrong_entity),
        Adversary("stale-seed", "stale seeded value", f.stale_seed),
        Adversary("shotgun", "shotgun card", f.shotgun),
        Adversary("fabricate", "fabricated value", f.fabricate),
        Adversary("lookalike", "type/normalisation game", f.lookalike),
        Adversary("abstain-clarify", "abstention abuse", f.abstain_clarify),
        Adversary("abstain-blocked", "abstention abuse", f.abstain_blocked),
    )
}
"""Every adversary by short name, in the order the audit table lists them."""

ADVERSARY_MODELS: tuple[str, ...] = tuple(ADV_PREFIX + name for name in ADVERSARIES)


def adversary_rng(name: str, task_id: str, seed: int) -> random.Random:
    """The adversary's only randomness, derived from content by sha256 (never ``hash()``)."""
    digest = hashlib.sha256(f"adv|{name}|{task_id}|{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def adversary_plan(name: str, task: Task, seed: int) -> list[Turn] | None:
    """The script adversary ``name`` plays on ``task``, ``None`` when the task offers it nothing."""
    return ADVERSARIES[name].plan(task, adversary_rng(name, task.id, seed))


def adversary_model(
    name: str,
    task: Task,
    seed: int,
    recorded_refs: Mapping[int, str] | None = None,
    recorded_values: Mapping[str, str] | None = None,
) -> ScriptedModel:
    """``apiflow/adv:<name>`` for one trial of ``task``.

    Args:
        name: A key of ``ADVERSARIES``.
        task: The task whose answer key the adversary reads.
        seed: The trial seed.
        recorded_refs: For ``epoch-replay``: the response refs an earlier trial minted, by golden
            execute index (the audit records them from an oracle trial of epoch 1). Without them
            the skipped steps' refs are simply missing.
        recorded_values: For ``epoch-replay``: that trial's per-trial forms of the bank values, sent
            (and reported) in place of the literals, as a transcript would show them.

    A task that offers the cheat nothing gets the plain answer-key script (still a cheat:
    the card without the calls), so every adversary is defined on every task.

    Raises:
        KeyError: Unknown adversary (the registry turns it into a UsageError).
    """
    turns = adversary_plan(name, task, seed) or f.answer_key(task, adversary_rng(name, task.id, seed)) or []
    model = ScriptedModel(ADV_PREFIX + name, turns)
    if recorded_refs or recorded_values:
        model.replay_from(dict(recorded_refs or {}), dict(recorded_values or {}))
    return model


__all__ = [
    "ADVERSARIES",
    "ADVERSARY_MODELS",
    "ADV_PREFIX",
    "Adversary",
    "adversary_model",
    "adversary_plan",
    "adversary_rng",
]
