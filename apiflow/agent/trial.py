"""One trial end to end: fresh world + workspace, the loop, grading, the schema-1.0 record.

Harness faults are kept apart from model failures: a ``ProviderError`` ends the trial as
``provider_error`` and any unexpected exception (setting up, in the loop, while grading) as
``harness_error``; both are recorded unscored (``verdict ""``) and never count against the model.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from apiflow.agent.canaries import canary_literals, trial_salting
from apiflow.agent.grades import GradeMemo
from apiflow.agent.ids import agent_version, canary_seed, derived_seed, trial_id_for
from apiflow.agent.intake import TURN_BOUNDS
from apiflow.agent.loop import LoopOutcome, TrialLimits, harness_error_text, model_secrets, run_loop
from apiflow.agent.prompts import initial_messages
from apiflow.agent.replay import Replay
from apiflow.bank.task import Task
from apiflow.grading import Evidence, Grade, evidence_from_workspace, grade
from apiflow.models.base import GenerateConfig, ModelClient
from apiflow.redact import SECRETS_ATTR, RedactingFilter
from apiflow.results.canary_key import CanaryKey
from apiflow.results.prices import Prices, calls_cost_usd
from apiflow.results.record import (
    ApiflowBlock,
    LimitHit,
    Provenance,
    Termination,
    Tokens,
    TokensDetail,
    TrialRecord,
)
from apiflow.tools import Toolbox, Workspace, tool_schema_hash
from apiflow.tools.limits import TOOL_BOUNDS
from apiflow.tools.schemas import offered_schemas
from apiflow.world import WorldDef, WorldSession
from apiflow.world.canaries import CanaryCodec

GRADING_RULES = "apiflow-1.1"
"""The rule set live trials are graded with: ``published-1.0`` plus the grader-exploit audit's fixes
(docs/design/011); ``apiflow regrade`` keeps ``published-1.0`` for published transcripts."""

logger = logging.getLogger(__name__)
logger.addFilter(RedactingFilter())  # an agent's ``end_trial`` fault may quote its own text

_SCHEMAS = offered_schemas()  # what every model is offered; read-only here

def _published_tokens(outcome: LoopOutcome) -> Tokens:
    """The published block: ``cache`` = cache reads, ``total = input + output + cache``."""
    u = outcome.usage
    output = u.output + u.reasoning  # published `output` is every completion token; our kinds are disjoint
    return Tokens(input=u.input, output=output, cache=u.cache_read, total=u.input + output + u.cache_read)


class _Trial:
    """Holds one trial's parts so setup, loop and grading each stay small."""

    def __init__(
        self, task: Task, world: WorldDef, seed: int, epoch: int, replay: Replay | None,
        canary_key: CanaryKey | None = None,
    ) -> None:  # fmt: skip
        self.task, self.world, self.seed, self.epoch = task, world, seed, epoch
        self.replay, self.canary_key = replay, canary_key
        self.messages: list[dict[str, Any]] = initial_messages(task)
        self.workspace: Workspace | None = None
        self.toolbox: Toolbox | None = None
        self.graded_task = task
        self.seeds: tuple[int, ...] = ()

    def setup(self) -> Toolbox:
        world_seed = derived_seed("world", self.seed, self.task.id, self.epoch)
        session = WorldSession(self.world, world_seed, state_overrides=self.task.world_state)
        spec = session.spec_content()
        workspace_seed = derived_seed("workspace", self.seed, self.task.id, self.epoch)
        self.workspace = Workspace(
            seed_variables=list(self.task.seed), spec_content=spec, id_seed=workspace_seed
        )
        # Bank canaries, ids and tokens take a per-trial form at the world's edge, and the task is
        # graded against those forms: a value copied from the answer key or another trial fails.
        codec, self.graded_task, canary = _salting(self.task, spec, self.seed, self.epoch, self.canary_key)
        self.seeds = (world_seed, workspace_seed, canary)
        send = codec.wrap(session.send)
        if self.replay is not None:
            # The trials of one (task, epoch) share these seeds whatever the model: what one of them
            # sent, another of the run gets answered from the memo (apiflow.world.transitions).
            memo = self.replay.transitions
            root = memo.root((id(self.task), id(self.world), world_seed, canary), (self.task, self.world))
            send = memo.send(session, send, root)
        # With replay, the toolbox keeps its own encoding of each call as it runs: the grade key.
        replay = self.replay
        self.toolbox = Toolbox(
            self.workspace, send, snapshot_calls=replay is not None, shown=replay.shown if replay else None
        )
        return self.toolbox

    def evidence(self) -> Evidence:
        assert self.workspace is not None, "setup() runs first"
        return evidence_from_workspace(self.workspace, self.messages)

    def grade(self) -> Grade | None:
        t = self.graded_task
        assert self.toolbox is not None, "setup() runs first"
        if self.replay is None:
            return grade(t.predicates, t.checkpoints, t.constraints, self.evidence(), rules=GRADING_RULES)
        memo, calls = self.replay.grades, self.toolbox.snapshots
        # The setup: the task, the spec salted for this trial (with its canary codec, one pair for
        # every trial of a task and canary seed: trial_salting), the world, the seeds; and the rules.
        held = (self.task, t, self.world)
        unkeyed = calls is None or None in calls  # a call held a value with no exact encoding
        key = None if unkeyed else GradeMemo.key(held, (*self.seeds, GRADING_RULES), (calls, self.messages))
        if key is not None:
            hit = memo.get(key)
            if hit is not None:
                return hit
        graded = grade(t.predicates, t.checkpoints, t.constraints, self.evidence(), rules=GRADING_RULES)
        if key is not None:
            memo.put(key, held, graded)
        return graded


def _salting(
    task: Task, spec_content: Any, seed: int, epoch: int, key: CanaryKey | None
) -> tuple[CanaryCodec, Task, int]:
    """A trial's canary codec, the task salted in its forms, and its canary seed."""
    canary = canary_seed(seed, task.id, epoch, key)
    codec, salted = trial_salting(task, canary_literals(task, spec_content), canary)
    return codec, salted, canary


def graded_task(
    task: Task, world: WorldDef, *, seed: int, epoch: int, canary_key: CanaryKey | None = None
) -> Task:
    """The spec ``run_trial`` grades a trial by: ``task`` in that trial's per-trial canary forms.

    For re-grading a stored record against its bank (``apiflow.agent.bank_regrade``): the world
    seed, spec document, literals and canary seed are the trial's own (its key's, if it had one).
    """
    world_seed = derived_seed("world", seed, task.id, epoch)
    spec = WorldSession(world, world_seed, state_overrides=task.world_state).spec_content()
    return _salting(task, spec, seed, epoch, canary_key)[1]


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialSpec:
    """One trial: what it plays and what its record says of it.

    Attributes:
        task: The bank task.
        world: The task's world definition.
        seed: The run's base seed; world, workspace and canary seeds derive from it, the task and the epoch.
        epoch: 1-based epoch, recorded as ``trial`` and ``provenance.epoch``.
        bank_name: Bank name recorded on the trial.
        bank_hash: Bank sha256 (part of the trial id).
        run_id: The run this trial belongs to.
        model_slug: Leaderboard slug recorded as ``model`` (the results folder name).
        limits: Trial limits (default 500 messages, 1,800 s).
        config: Generation parameters (default temperature 1.0).
        trial_id: The id to record, when the caller already holds it (a grid's planner derives its
            own, over more than this spec says); by default ``trial_id_for`` these fields.
        canary_key: The results folder's secret canary key (``apiflow.results.canary_key``), or None
            for canary forms derived from the seed alone; the record names the key's id only.
        prices: The model's prices: the record's ``cost_usd`` is its calls priced one by one
            (``calls_cost_usd``: a long-context rate applies to the calls above its threshold
            only; each call at the tier its provider said served it, ``Prices.at_tier``); None
            leaves the cost unset. Not part of the trial id.
    """

    task: Task
    world: WorldDef
    seed: int
    epoch: int
    bank_name: str
    bank_hash: str
    run_id: str
    model_slug: str
    limits: TrialLimits | None = None
    config: GenerateConfig | None = None
    trial_id: str | None = None
    canary_key: CanaryKey | None = None
    prices: Prices | None = None


class PlayedTrial(NamedTuple):
    """A trial played but not graded: what the loop did, its evidence, the spec to grade it by."""

    outcome: LoopOutcome
    evidence: Evidence
    task: Task


async def trial_evidence(
    task: Task,
    world: WorldDef,
    model: ModelClient,
    *,
    seed: int,
    epoch: int,
    limits: TrialLimits | None = None,
    replay: Replay | None = None,
    canary_key: CanaryKey | None = None,
) -> PlayedTrial:
    """Play one trial exactly as ``run_trial`` does and return its evidence, ungraded.

    For callers that grade the same trial under several rule sets (``apiflow bank audit``):
    world and workspace seeds, canaries, loop and evidence builder are the ones of a real
    trial, so grading ``evidence`` against ``task`` (the spec in this trial's per-trial
    canary forms) under ``GRADING_RULES`` gives the verdict ``run_trial`` records. ``canary_key``:
    as ``TrialSpec.canary_key``.
    """
    trial = _Trial(task, world, seed, epoch, replay, canary_key)
    outcome = await run_loop(model, trial.setup(), _SCHEMAS, trial.messages, limits=limits or TrialLimits())
    await _end_trial(model, trial.messages)
    return PlayedTrial(outcome, trial.evidence(), trial.graded_task)


async def _end_trial(model: ModelClient, messages: list[dict[str, Any]]) -> None:
    """Tell a model that drives the trial from outside (``apiflow.mcp.AgentBridge``) that the loop
    stopped, with the final transcript: its agent's last calls get their results (an abstention's,
    or "trial is over" after a limit) and its process and server are released. Ordinary models
    have no ``end_trial`` and nothing happens."""
    end = getattr(model, "end_trial", None)
    if end is not None:
        await end(messages)


async def run_trial(spec: TrialSpec, model: ModelClient, *, replay: Replay | None = None) -> TrialRecord:
    """Run one trial with ``model`` and return its graded record (callers: ``apiflow.runner``).

    Args:
        spec: The trial.
        model: Its model (``make_model(name, task, trial_seed(seed, task.id, epoch))``).
        replay: The run's shared world answers and grades (``apiflow.agent.replay``), or None to
            work every answer and grade out afresh; the record is the same either way.

    Returns:
        The record; identical across runs with the same inputs apart from ``duration_s`` and
        ``provenance.created``.
    """
    task, world, seed, epoch, config = spec.task, spec.world, spec.seed, spec.epoch, spec.config
    bank_name, bank_hash, model_slug = spec.bank_name, spec.bank_hash, spec.model_slug
    limits = spec.limits or TrialLimits()
    created = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    trial = _Trial(task, world, seed, epoch, replay, spec.canary_key)
    outcome = LoopOutcome()
    graded: Grade | None = None
    schema_hash = ""
    try:
        schema_hash = tool_schema_hash()
        toolbox = trial.setup()
        outcome = await run_loop(model, toolbox, _SCHEMAS, trial.messages, limits=limits, config=config)
        await _end_trial(model, trial.messages)
        if outcome.termination not in (Termination.PROVIDER_ERROR, Termination.HARNESS_ERROR):
            graded = trial.grade()
    except Exception as exc:  # noqa: BLE001 - setup or grading fault: a harness outcome, never the model's
        secrets = model_secrets(model)  # ``end_trial`` is the model's (an external agent's) code too
        logger.exception(
            "harness error while setting up or grading %s", task.id, extra={SECRETS_ATTR: secrets}
        )
        outcome.termination = Termination.HARNESS_ERROR
        outcome.harness_error = harness_error_text(exc, secrets)
        graded = None
    version = agent_version(limits)
    trial_id = spec.trial_id
    if trial_id is None:
        trial_id = trial_id_for(
            bank_hash, task.id, model_slug, model.model_api, epoch, seed, version, schema_hash
        )
    block = _apiflow_block(
        outcome, graded, bank_name=bank_name, bank_hash=bank_hash, seed=seed, trial_id=trial_id,
        version=version, schema_hash=schema_hash, canary_key=spec.canary_key,
    )  # fmt: skip
    if spec.prices is not None:  # per call, so a surcharge lands on the calls that crossed it only
        block.cost_usd = calls_cost_usd(outcome.calls, spec.prices, outcome.tiers)
    return TrialRecord(
        model=model_slug,
        model_api=model.model_api,
        task_id=task.id,
        trial=epoch,
        verdict=graded.verdict if graded is not None else "",
        passed=graded.passed if graded is not None else None,
        failure_reason=graded.failure_reason if graded is not None else "",
        tokens=_published_tokens(outcome),
        duration_s=round(time.perf_counter() - started, 3),
        messages=trial.messages,
        verifier=graded.verifier if graded is not None else None,
        provenance=Provenance(run_id=spec.run_id, epoch=epoch, created=created),
        apiflow=block,
    )


def _apiflow_block(
    outcome: LoopOutcome,
    graded: Grade | None,
    *,
    bank_name: str,
    bank_hash: str,
    seed: int,
    trial_id: str,
    version: str,
    schema_hash: str,
    canary_key: CanaryKey | None = None,
) -> ApiflowBlock:
    """Our block: identity, termination, counts, tokens by kind, retries."""
    u = outcome.usage
    return ApiflowBlock(
        trial_id=trial_id,
        bank=bank_name,
        bank_hash=bank_hash,
        seed=seed,
        termination=outcome.termination,
        limit=outcome.limit,
        model_calls=outcome.model_calls,
        tool_calls=outcome.tool_calls,
        tool_errors=outcome.tool_errors,
        parse_errors=outcome.parse_errors,
        tokens=TokensDetail(
            input=u.input,
            output=u.output,
            cache_read=u.cache_read,
            cache_write=u.cache_write,
            reasoning=u.reasoning,
            cache_write_1h=u.cache_write_1h,
        ),
        provider_cost_usd=outcome.provider_cost_usd,
        retries=outcome.retries,
        served=outcome.served,
        agent_error=outcome.agent_error,
        harness_error=outcome.harness_error,
        grader=GRADING_RULES if graded is not None else None,
        agent_version=version,
        tool_schema_hash=schema_hash,
        limits_hit=limits_hit(outcome) if outcome.input.limits else [],
        input_repairs=dict(outcome.input.repairs),
        canary_key_id=canary_key.id if canary_key is not None else None,
    )


def limits_hit(outcome: LoopOutcome) -> list[LimitHit]:
    """The bounds on model input the trial hit, with their values (empty for nearly every trial)."""
    values = {**TOOL_BOUNDS, **TURN_BOUNDS}
    return [LimitHit(limit=name, value=values[name], hits=n) for name, n in outcome.input.limits.items()]
