"""``apiflow/sim:calibrated-<slug>``: simulated agents fitted to one published model each.

The parameters come from ``configs/panels/calibrated-original-19.json`` (written by
``apiflow panel fit`` from the published table; docs/design/070-bank-science.md). The outcome
model is ``apiflow.models.latent``'s, played out on real trials:

* whether a task is *stuck* for the model is a property of (model, task), the same in every epoch
  and every run seed: a normal liability summed from a world term and a task term shared by every
  model and a term of the model's own, each drawn by sha256 from the task's content;
* a stuck trial passes only when lucky; otherwise it misreports the card, abstains, or leaves out
  the work of one of its subtasks;
* an unstuck trial draws a focus factor from the trial seed that scales every per-step deviation
  probability of the trial: each subtask slips (its work is left out, or it abstains) with
  ``slip * focus``, the card is misreported with ``card * focus``.

Every deviation is one the bank's gates prove fatal (an essential step skipped, a wrong card value,
an abstention), so the grader, not the sim, decides the verdict.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist
from typing import Any

from apiflow.analysis.panels import ORIGINAL_19_MODELS
from apiflow.bank.task import TASK_ID_RE, GoldenCall, Task
from apiflow.errors import UsageError
from apiflow.hashing import content_hash
from apiflow.models.latent import SOLO, LatentParams, stuck_threshold
from apiflow.models.offline import PlannedCall, ScriptedModel, Turn, card_text, golden_literals, golden_turns
from apiflow.models.sim import sim_rng, wrong_value  # the sims' shared notion of a plausible wrong value
from apiflow.resources import shipped
from apiflow.world.memo import IdentityMemo

CALIBRATED_PREFIX = "calibrated-"
PANEL_FILE = shipped("configs/panels/calibrated-original-19.json")

CALIBRATED_PANEL: tuple[str, ...] = tuple(
    f"apiflow/sim:{CALIBRATED_PREFIX}{slug}" for slug in sorted(ORIGINAL_19_MODELS)
)
"""The calibrated panel's model names, one per published original-19 model (slug order)."""

_NORMAL = NormalDist()
_segments_memo: IdentityMemo[Task, dict[int, list[int]]] = IdentityMemo()
_ABSTAIN_TEXT = "The API does not behave as described and I cannot see a safe way to continue."


def calibrated_panel() -> tuple[str, ...]:
    """The calibrated panel's model names (``apiflow/sim:calibrated-<slug>``)."""
    return CALIBRATED_PANEL


def is_calibrated_profile(profile: str) -> bool:
    """True for ``calibrated-<slug>`` with ``slug`` one of the published original-19 models."""
    return profile.startswith(CALIBRATED_PREFIX) and profile[len(CALIBRATED_PREFIX) :] in ORIGINAL_19_MODELS


@dataclass(frozen=True)
class CalibratedProfile:
    """One model's fitted parameters and the panel's shared liability shares."""

    slug: str
    params: LatentParams
    world_share: float
    task_share: float


def _verified(document: dict, path: Path) -> dict:
    body = {k: v for k, v in document.items() if k != "sha256"}
    if document.get("sha256") != content_hash(body):
        raise UsageError(
            f"{path}: sha256 does not match its content (regenerate it with `apiflow panel fit`)"
        )
    return document


@functools.cache
def load_profiles(path: Path = PANEL_FILE) -> dict[str, CalibratedProfile]:
    """The fitted profiles by slug, from a pinned panel file (its hash checked).

    Raises:
        UsageError: missing, unreadable or tampered file.
    """
    try:
        document = _verified(json.loads(path.read_text(encoding="utf-8")), path)
        shared = document["shared"]
        fields = LatentParams.__dataclass_fields__
        return {
            slug: CalibratedProfile(
                slug=slug,
                params=LatentParams(**{name: float(entry[name]) for name in fields}),
                world_share=float(shared["world_share"]),
                task_share=float(shared["task_share"]),
            )
            for slug, entry in document["models"].items()
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"cannot read calibrated panel {path}: {exc}") from None


def _normal(*parts: object) -> float:
    """A standard-normal draw fixed by content (sha256), the same on every run and machine."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    u = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
    return _NORMAL.inv_cdf(u)


@functools.lru_cache(maxsize=65536)
def _task_key(task_id: str, prompt: str) -> tuple[str, str]:
    """(world key, task key): the bank prefix names the split, the prompt's hash its content."""
    match = TASK_ID_RE.match(task_id)
    bank = match["bank"] if match else task_id
    world = f"{bank}-w{match['world']}" if match else task_id
    return world, f"{task_id}|{hashlib.sha256(prompt.encode()).hexdigest()[:16]}"


def is_stuck(profile: CalibratedProfile, task: Task) -> bool:
    """Whether ``task`` is beyond the model: the same in every epoch and run."""
    return _stuck(profile, task.id, task.prompt, task.length if task.kind == "chain" else SOLO)


@functools.lru_cache(maxsize=65536)
def _stuck(profile: CalibratedProfile, task_id: str, prompt: str, subtasks: int) -> bool:
    # Asked once a trial, answered alike in every epoch (three hashes and a numpy threshold): a grid
    # asks it epochs times for each (model, task).
    world, key = _task_key(task_id, prompt)
    own_share = max(1.0 - profile.world_share - profile.task_share, 0.0)
    liability = (
        math.sqrt(profile.world_share) * _normal("calibrated", "world", world)
        + math.sqrt(profile.task_share) * _normal("calibrated", "task", key)
        + math.sqrt(own_share) * _normal("calibrated", "own", profile.slug, key)
    )
    return liability > stuck_threshold(profile.params, subtasks)


def _segments(task: Task) -> dict[int, list[int]]:
    """Essential golden-step indices per subtask (a solo task is one subtask; shared, read-only)."""
    return _segments_memo.get(task, _essential_steps)


def _essential_steps(task: Task) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for index, step in enumerate(task.golden):
        if step.essential:
            out.setdefault(step.segment or 1, []).append(index)
    return out


def _wrong_card(task: Task, rng: random.Random) -> dict[str, Any]:

    card = dict(task.expected_card)
    if card:
        name = rng.choice(sorted(card))
        card[name] = wrong_value(card[name], rng)
    return card


class _Script:
    """The golden turns of one trial with the drawn deviations applied."""

    def __init__(self, task: Task, rng: random.Random) -> None:
        self.task, self.rng = task, rng
        self.skip: set[int] = set()
        self.abstain_at: int | None = None
        self.card: dict[str, Any] | None = None

    def slip(self, segment: int, abstain: float) -> bool:
        """A deviation in ``segment``: an abstention there (returns True: the trial ends) or work
        left out: one essential step of a solo task, every essential step of a chain's segment.

        A chain is graded on its last segment only, so one step of an earlier segment left out is
        not always fatal (on bank/v1, 2 of 87 sampled single skips before segment K-1 still
        passed, which made stuck chains pass twice as often as the fit says). A segment whose
        work is missing starves every later segment of its output (the gates prove it for
        segment K-1); tests/panel checks that each such skip fails on the sample bank.
        """
        steps = _segments(self.task).get(segment) or [0]
        if self.rng.random() < abstain:
            self.abstain_at = steps[0]
            return True
        if self.task.kind == "chain":
            self.skip.update(steps)
        else:
            self.skip.add(self.rng.choice(steps))
        return False

    def turns(self) -> list[Turn]:
        golden = golden_turns(self.task)
        if not self.skip and self.abstain_at is None and self.card is None:
            # No deviation: the shared golden script itself (read-only, as the oracle plays it),
            # so what the model derives per script (its literals) is derived once per task.
            return golden
        steps = golden[:-1]
        if self.abstain_at is not None:
            name, key = self.rng.choice((("clarify", "question"), ("report_blocked", "reason")))
            call = PlannedCall(GoldenCall(name=name, arguments={key: _ABSTAIN_TEXT}))
            kept = [t for i, t in enumerate(steps[: self.abstain_at]) if i not in self.skip]
            return [*kept, Turn((call,))]
        kept = [t for i, t in enumerate(steps) if i not in self.skip]
        final = golden[-1] if self.card is None else Turn(text=card_text(self.card))
        return [*kept, final]


def _focus(profile: LatentParams, rng: random.Random) -> float:
    z = _NORMAL.inv_cdf(min(max(rng.random(), 1e-12), 1 - 1e-12))
    return math.exp(profile.focus_sd * z - profile.focus_sd**2 / 2)


def plan(profile: CalibratedProfile, task: Task, rng: random.Random) -> list[Turn]:
    """Draw one trial's script."""
    p = profile.params
    script = _Script(task, rng)
    segments = sorted(_segments(task)) or [1]
    if is_stuck(profile, task):
        if rng.random() < p.lucky:
            return script.turns()
        if rng.random() < p.stuck_card:
            script.card = _wrong_card(task, rng)
        else:
            script.slip(rng.choice(segments), p.abstain)
        return script.turns()
    focus = _focus(p, rng)
    for segment in segments:
        if rng.random() < p.slip * focus and script.slip(segment, p.abstain):
            return script.turns()
    if rng.random() < p.card * focus:
        script.card = _wrong_card(task, rng)
    return script.turns()


def calibrated_model(task: Task, seed: int, profile_name: str) -> ScriptedModel:
    """``apiflow/sim:calibrated-<slug>`` for one trial of ``task``.

    Raises:
        KeyError: not a calibrated profile name (the registry checks names first).
        UsageError: the pinned panel file is missing or tampered.
    """
    if not is_calibrated_profile(profile_name):
        raise KeyError(profile_name)
    profile = load_profiles()[profile_name[len(CALIBRATED_PREFIX) :]]
    turns = plan(profile, task, sim_rng(seed, task.id, profile_name))
    literals = golden_literals(task) if turns is golden_turns(task) else None  # the shared script's, once a task
    return ScriptedModel(f"apiflow/sim:{profile_name}", turns, literals)
