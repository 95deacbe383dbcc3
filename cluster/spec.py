"""The grid spec: one frozen pydantic model loaded from YAML (``configs/grids/*.yaml``).

A grid is models × tasks × epochs. Everything that changes a trial's output goes into its
id (cluster/plan.py); everything else (output URL, budget, concurrency) may change between a
run and its resume.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from apiflow.errors import UsageError
from apiflow.models.caching import cache_ttl
from apiflow.models.provider_fields import provider_route
from apiflow.models.registry import check_model_name, is_offline, model_slug
from apiflow.redact import credential_keys
from apiflow.resources import resolve
from cluster.question import GridQuestion, short_form

_FROZEN = ConfigDict(extra="forbid", frozen=True)
NAMES_CHECKED = "model_names_checked"
"""Validation context key: the model names were checked where the spec was first loaded."""


class GridModel(BaseModel):
    """One model of the grid.

    Attributes:
        model: ``apiflow/...`` offline model or a litellm model id (``openai/gpt-5-mini``).
        slug: Leaderboard slug recorded as ``model`` (default derived from ``model``).
        params: Transport parameters for litellm (``api_base``, ``api_key``, ``timeout``, ...): where
            and how to call, not what to generate, so NOT part of the trial id (moving a provider
            endpoint keeps a resume valid). Never written to the manifest (keys only).
        temperature: Sampling temperature (part of the trial id).
        max_tokens: Output cap per call (part of the trial id; also the worst case the budget reserves).
        extra: Further generation arguments (``reasoning_effort``, ``top_p``...); part of the trial id.
        provider: Rate-limit key (default: the litellm route prefix; offline models have none).
        tier: The provider tier the model's calls go to: ``standard``; ``batch`` (its turns gathered
            into provider batches, ``apiflow.models.turn_batcher``; ``openai/`` chat and ``anthropic/``
            routes); ``flex`` or ``priority`` (OpenAI's ``service_tier``). Like ``params``, a transport
            setting: it changes the price and the wait, not the trial id.
        batching: How the batch tier gathers turns (size, wait, poll, deadline).
    """

    model_config = _FROZEN

    model: str
    slug: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    temperature: float = 1.0
    max_tokens: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    provider: str = ""
    tier: Literal["standard", "batch", "flex", "priority"] = "standard"
    batching: BatchTier = Field(default_factory=lambda: BatchTier())

    @model_validator(mode="after")
    def _defaults(self, info: ValidationInfo) -> GridModel:
        # A worker re-reads the spec the driver already checked (``NAMES_CHECKED``): a plug-in
        # missing on one node must fail that node's trials as harness errors, not its actors.
        if not (info.context or {}).get(NAMES_CHECKED):
            try:
                check_model_name(self.model)
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        try:
            _check_transport(self.model, self.params)
            _check_tier(self.model, self.tier, self.params)
        except UsageError as exc:
            raise ValueError(str(exc)) from None
        credentials = credential_keys(self.extra)
        if credentials:  # ``extra`` is recorded in the manifest and hashed into trial ids
            raise ValueError(
                f"extra.{credentials[0]} looks like a credential: put it in params (never recorded)"
            )
        if not self.slug:
            object.__setattr__(self, "slug", model_slug(self.model))
        if not self.provider and not is_offline(self.model):
            object.__setattr__(self, "provider", self.model.split("/", 1)[0])
        return self

    @property
    def offline(self) -> bool:
        """True for in-process models (no provider, no rate limit, no network)."""
        return is_offline(self.model)


def _check_transport(model: str, params: dict[str, Any]) -> None:
    """Refuse, when the grid loads, transport settings a worker's client would refuse at its first
    trial (``params.api``, ``cache_ttl``, ``prompt_caching``): a typo must not become a grid of
    harness errors."""
    if is_offline(model):
        return
    provider_route(model, params)
    cache_ttl(params)
    if not isinstance(params.get("prompt_caching", True), bool):
        raise UsageError(f"params.prompt_caching must be true or false, got {params['prompt_caching']!r}")


def _check_tier(model: str, tier: str, params: dict[str, Any]) -> None:
    if tier == "standard":
        return
    batchable = model.startswith("anthropic/") or (
        model.startswith("openai/") and not model.startswith("openai/responses/") and params.get("api") != "responses"
    )
    if tier == "batch" and not batchable:
        raise UsageError(f"tier batch needs an openai/ (chat) or anthropic/ model, got {model!r}")
    if tier in ("flex", "priority") and not model.startswith("openai/"):
        raise UsageError(f"tier {tier} is OpenAI's service_tier: it needs an openai/ model, got {model!r}")
    if params.get("service_tier") not in (None, tier):
        raise UsageError(f"tier {tier} and params.service_tier {params['service_tier']!r} disagree")


class BatchTier(BaseModel):
    """How a ``tier: batch`` model's turns are gathered (``apiflow.models.turn_batcher.BatchSettings``)."""

    model_config = _FROZEN

    size: int = Field(default=256, ge=1)
    wait_s: float = Field(default=30.0, gt=0)
    poll_s: float = Field(default=30.0, gt=0)
    deadline_s: float = Field(default=3600.0, gt=0)
    resubmits: int = Field(default=1, ge=0)
    expected_s: float = Field(default=600.0, gt=0)
    """How long a provider typically takes to end a batch: the dry run's wall-time estimate only
    (providers promise 24 h and usually end sooner; set it from what your account sees)."""


class Sample(BaseModel):
    """A seeded random sample of the selected tasks, drawn per stratum so every stratum keeps its share.

    Attributes:
        per: The strata: ``world-axis`` (each world's tasks of each capability axis; chains are
            their own axis), ``world``, ``axis`` or ``none`` (one stratum).
        fraction: Keep this share of each stratum (at least one task of each).
        count: Keep this many tasks of each stratum (all of a smaller one).
        seed: The draw's seed (default: the grid's).
    """

    model_config = _FROZEN

    per: Literal["world-axis", "world", "axis", "none"] = "world-axis"
    fraction: float | None = Field(default=None, gt=0, le=1)
    count: int | None = Field(default=None, ge=1)
    seed: int | None = None

    @model_validator(mode="after")
    def _one_size(self) -> Sample:
        if (self.fraction is None) == (self.count is None):
            raise ValueError("a sample takes exactly one of fraction or count")
        return self


class TaskFilter(BaseModel):
    """Which bank tasks the grid runs.

    Attributes:
        ids: Explicit task ids (default: all).
        worlds: Keep only these worlds (``w01``...).
        kind: ``solo``, ``chain`` or ``all``.
        min_length / max_length: Chain length K (solo: sub index) bounds.
        axes: Keep only these capability axes (``pagination``, ``authentication``, ...; ``chain``).
        difficulties: Keep only these difficulties (``easy``, ``medium``, ``hard``).
        exclude: Task ids to leave out (the screened cells, say). A grid file may name them in a
            file instead (``exclude_file``: one id a line, ``#`` starts a comment, the path relative
            to the grid file); ``load_grid`` reads it into this list, so the grid's id follows the
            ids, not where the file was.
        sample: A seeded stratified sample of what the filters above keep.
        count: Run exactly this many task slots, cycling through the selected tasks with a new
            seed per cycle (how a small bank stands in for a full-size one in benchmarks).
    """

    model_config = _FROZEN

    ids: list[str] | None = None
    worlds: list[str] | None = None
    kind: Literal["solo", "chain", "all"] = "all"
    min_length: int | None = None
    max_length: int | None = None
    axes: list[str] | None = None
    difficulties: list[Literal["easy", "medium", "hard"]] | None = None
    exclude: list[str] | None = None
    sample: Sample | None = None
    count: int | None = Field(default=None, ge=1)

    def identity(self) -> dict[str, Any]:
        """What decides the selection: the fields a grid sets (those added since grid ids were first
        pinned are left out while unset, so an existing grid keeps its id)."""
        unset = {name for name in _LATER_FILTERS if getattr(self, name) is None}
        return self.model_dump(mode="json", exclude=unset)


_LATER_FILTERS = ("axes", "difficulties", "exclude", "sample")


class Concurrency(BaseModel):
    """How much runs at once.

    Attributes:
        actors: Trial-worker actors (default: one per CPU of the cluster).
        trials_per_actor: Trials an actor runs concurrently (LLM trials are I/O bound).
        batch: Trials per actor call for offline models (keeps Ray overhead a small share); also
            the storage batch: their rows are committed as one object per call (042).
        window: In-flight actor calls the driver keeps (default 2 × actors × calls per actor).
        ramp_s: Provider trials only: the first ``actors × trials_per_actor`` starts are spread
            evenly over this many seconds instead of all going out at once (0: at once). Set it
            near the provider's typical latency: trials started together answer together, and an
            actor works a burst of answers off in turns before the next wave of calls goes out,
            so each slot's round lasts latency + the whole burst's CPU
            (docs/results/043-retries-and-rate-limits-measurements.md, "Concurrency, round three").
    """

    model_config = _FROZEN

    actors: int | None = Field(default=None, ge=1)
    trials_per_actor: int = Field(default=16, ge=1)
    batch: int = Field(default=64, ge=1)
    window: int | None = Field(default=None, ge=1)
    ramp_s: float = Field(default=0.0, ge=0.0)


class Limits(BaseModel):
    """Per-trial limits (``apiflow.agent.TrialLimits``); part of the trial id via the agent version."""

    model_config = _FROZEN

    max_messages: int | None = 500
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = 1800.0


class Retry(BaseModel):
    """The provider retry policy (``apiflow.models.retry.RetryPolicy``)."""

    model_config = _FROZEN

    max_attempts: int = Field(default=8, ge=1)
    max_elapsed_s: float = 900.0
    base_s: float = 1.0
    max_wait_s: float = 60.0


class RateLimit(BaseModel):
    """One provider key's limits (requests and tokens per minute)."""

    model_config = _FROZEN

    rpm: float = Field(gt=0)
    tpm: float | None = Field(default=None, gt=0)
    burst_s: float = Field(default=1.0, gt=0)
    headroom: float = Field(default=0.97, gt=0, le=1)
    """Fraction of the limit the gate aims for: clock skew and network jitter between our bucket and the
    provider's would otherwise turn a request sent exactly on time into an occasional 429."""
    adaptive: bool = True
    """Learn the real rate from 429s (AIMD under this ceiling, docs/design/043-retries-and-rate-limits.md);
    false keeps the configured rates fixed (a provider whose limit is known exactly, or the baseline
    ``bench/bench_ratelimit.py`` measures against)."""


class GridSpec(BaseModel):
    """A grid of trials: models × tasks × epochs, and how to run and store it.

    ``seed`` None (a grid file without ``seed:``): drawn at the grid's first run and kept in its
    manifest, so new grids share no seed by default (``cluster.manifest.settled_seed``); a grid
    built in code without one keeps 0. ``canary_key``: ``folder`` derives canary forms from the
    output's secret key (``apiflow.results.canary_key``), ``none`` from the seed alone; neither
    enters the grid id (trial ids are the same either way).
    """

    model_config = _FROZEN

    name: str = "grid"
    bank: str = "bank/sample"
    bank_hash: str | None = None
    models: list[GridModel] = Field(min_length=1)
    tasks: TaskFilter = Field(default_factory=TaskFilter)
    epochs: int = Field(default=1, ge=1)
    seed: int | None = 0
    canary_key: Literal["folder", "none"] = "folder"
    out: str = "results/grid"
    storage_options: dict[str, Any] = Field(default_factory=dict)
    row_format: Literal["parquet", "arrow"] = "parquet"
    """Per-trial row objects: Parquet (default) or Arrow IPC (25x cheaper to write; see design note 042)."""
    budget_usd: float | None = Field(default=None, gt=0)
    price_table: str = "configs/prices/2027-02.yaml"  # as DEFAULT_PRICE_TABLE
    concurrency: Concurrency = Field(default_factory=Concurrency)
    limits: Limits = Field(default_factory=Limits)
    retry: Retry = Field(default_factory=Retry)
    max_unscored_attempts: int = Field(default=3, ge=1)
    """A trial with this many unscored (harness/provider) attempts on record is not planned again:
    it stays unscored, final, until ``grid run --retry-unscored`` (``cluster.plan.resume_plan``)."""
    ratelimits: dict[str, RateLimit] = Field(default_factory=dict)
    ratelimits_file: str | None = None
    preflight: Literal["auto", "call", "env", "off"] = "auto"
    """Key checks before the first trial (``cluster.preflight``): ``env`` checks a key is in reach,
    ``call`` also asks the provider with one tiny call, ``auto`` does both for routes with no
    ``api_base`` of their own (real providers) and nothing for the others (a local server may need
    no key); ``off`` skips them."""
    question: GridQuestion | None = None
    """An adaptive sweep's question (``cluster.question``); None runs the whole plan. Not part of the id."""

    @model_validator(mode="before")
    @classmethod
    def _question_text(cls, data: Any) -> Any:
        return short_form(data)  # ``question: "rank:1"`` for short

    @model_validator(mode="after")
    def _unique_slugs(self) -> GridSpec:
        slugs = [m.slug for m in self.models]
        if len(set(slugs)) != len(slugs):
            raise ValueError(f"model slugs must be unique, got {slugs}")
        if self.question is not None:
            self.question.check_models(self.models)
        return self

    def identity(self) -> dict[str, Any]:
        """The fields that decide which trials exist and what they produce."""
        return {
            "bank_hash": self.bank_hash,
            "models": [
                m.model_dump(mode="json", exclude={"provider", "params", "tier", "batching"}) for m in self.models
            ],
            "tasks": self.tasks.identity(),
            "epochs": self.epochs,
            "seed": self.base_seed,
            "limits": self.limits.model_dump(mode="json"),
        }

    @property
    def base_seed(self) -> int:
        """The seed trials derive from.

        Raises:
            UsageError: The seed is still to be drawn (``cluster.manifest.settled_seed`` first).
        """
        if self.seed is None:
            raise UsageError(f"grid {self.name} has no seed yet: it is drawn at the grid's first run")
        return self.seed

    def with_overrides(self, **changes: Any) -> GridSpec:
        """A copy with top-level fields replaced (CLI flags); validated again."""
        data = self.model_dump(mode="json")
        data.update({k: v for k, v in changes.items() if v is not None})
        return GridSpec.model_validate(data)


def canonical_hash(value: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no spaces): stable across field order."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def load_grid(path: str | Path) -> GridSpec:
    """Read and validate a grid YAML; rate limits may come from a separate file.

    The grid, its bank, price table and rate limits file may each be a path or a shipped name
    (``demo``, ``v1``, ``2027-01``: ``apiflow.resources``), so a shipped grid runs from any folder.

    Raises:
        UsageError: Missing file, bad YAML or an invalid field (one line naming it).
    """
    path = resolve("grid", path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read grid {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"grid {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"grid {path} must be a mapping")
    data = {"seed": None, **data}  # a grid file without a seed gets one drawn at its first run
    tasks = data.get("tasks")
    if isinstance(tasks, dict) and "exclude_file" in tasks:
        tasks = dict(tasks)
        listed = _task_ids_in(path.parent / str(tasks.pop("exclude_file")))
        data = {**data, "tasks": {**tasks, "exclude": sorted(set(tasks.get("exclude") or ()) | listed)}}
    limits_file = data.get("ratelimits_file")
    if limits_file:
        data = {
            **data,
            "ratelimits": {**_read_ratelimits(resolve("ratelimits", limits_file)), **(data.get("ratelimits") or {})},
        }
    data = {**data, **_shipped_paths(data)}
    try:
        return GridSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UsageError(f"grid {path}: invalid {where}: {first['msg']}") from None


def _shipped_paths(data: dict[str, Any]) -> dict[str, str]:
    """``bank`` and ``price_table`` as the files they name (a shipped name becomes its path); one that
    names nothing is left as written, for the run to refuse where it loads it."""
    found = {}
    for key, kind in (("bank", "bank"), ("price_table", "prices")):
        value = data.get(key, GridSpec.model_fields[key].default)
        if isinstance(value, str) and "://" not in value:
            try:
                found[key] = str(resolve(kind, value))
            except UsageError:
                pass
    return found


def _task_ids_in(path: Path) -> set[str]:
    """The task ids a file lists, one a line (``#`` starts a comment)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the exclude file {path}: {exc.strerror}") from None
    return {line.split("#", 1)[0].strip() for line in text.splitlines()} - {""}


def _read_ratelimits(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read rate limits {path}: {exc.strerror}") from None
    providers = (data or {}).get("providers")
    if not isinstance(providers, dict):
        raise UsageError(f"rate limits {path} need a `providers:` mapping")
    return providers
