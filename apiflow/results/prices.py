"""Pinned, versioned token prices and the cost of a trial computed from them.

Cost is ours, not the provider library's: a price table is a YAML file under
``configs/prices/`` whose sha256 goes into every run manifest, so a reported
dollar figure can always be traced to the exact prices it was computed with.
litellm's own ``response_cost`` is kept on the record only as a cross-check
(docs/design/041-prices-and-rows.md).

A long-context surcharge is decided per request (a call whose prompt is above the threshold is billed
whole at the higher rates), so it can only be priced call by call (``call_cost_usd``); a trial's
summed tokens price exactly only when none of its calls crossed it (``cost_usd``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from apiflow.errors import UsageError
from apiflow.resources import resolve, shipped

PRICE_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")
"""Token kinds priced separately. The kinds are disjoint: ``output`` excludes reasoning tokens."""

WRITE_1H = "cache_write_1h"
"""Cache writes with Anthropic's one-hour lifetime: a part of ``cache_write``, not a sixth disjoint kind,
so every sum, row column and rate-limit count of cache writes keeps meaning all writes; only the price
tells them apart (2x input where a five-minute write is 1.25x)."""

DEFAULT_PRICE_TABLE = shipped("configs/prices/2027-02.yaml")


RATE_KINDS = (*PRICE_KINDS, WRITE_1H)


class Rates(BaseModel):
    """USD per one million tokens of each kind (``cache_write_1h`` None: one-hour writes cost what
    ``cache_write`` does, as in a table that does not tell them apart)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0.0)
    output: float = Field(ge=0.0)
    cache_read: float = Field(ge=0.0)
    cache_write: float = Field(ge=0.0)
    reasoning: float = Field(ge=0.0)
    cache_write_1h: float | None = Field(default=None, ge=0.0)


class LongContextRates(Rates):
    """The rates of a call whose prompt is above ``above_input_tokens`` (input, cache reads and writes):
    the provider bills the whole call, every kind, at them, not only the tokens past the threshold."""

    above_input_tokens: int = Field(gt=0)


class Prices(Rates):
    """A model's rates at one tier, and its long-context rates where its provider has them.

    Prices from a table also hold the model's rates at the table's other tiers (private: not a rate
    of these prices, so dumps and a free model's zero rates stay as they were), so a call its
    provider says it served at another tier is priced at that tier (``at_tier``).
    """

    long_context: LongContextRates | None = None
    _tiers: dict[str, Prices] = PrivateAttr(default_factory=dict)

    def at_tier(self, tier: str | None) -> Prices:
        """These prices at the tier a provider said it served a call at (``ModelOutput.tier``).

        The table's prices for that tier when the table these came from lists it for the model;
        otherwise these, the tier the call asked for: a provider that named no tier, a tier the table
        does not have for the model (OpenAI's ``scale``, Claude's ``priority`` in a batch-only entry)
        and prices from no table (a plug-in's own) all price as asked.
        """
        return self._tiers.get(tier, self) if isinstance(tier, str) else self


class LongContextEntry(BaseModel):
    """A table's ``long_context`` block. ``input`` and ``output`` are required; a cache kind left out is
    its base rate times the input ratio and ``reasoning`` its base rate times the output ratio, because
    providers bill them as multiples of those."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    above_input_tokens: int = Field(gt=0)
    input: float = Field(ge=0.0)
    output: float = Field(ge=0.0)
    cache_read: float | None = Field(default=None, ge=0.0)
    cache_write: float | None = Field(default=None, ge=0.0)
    cache_write_1h: float | None = Field(default=None, ge=0.0)
    reasoning: float | None = Field(default=None, ge=0.0)

    def rates(self, base: Rates) -> dict[str, float | None]:
        """Every kind's rate above the threshold, the kinds left out derived from ``base``."""
        by_input = self.input / base.input if base.input else 1.0
        by_output = self.output / base.output if base.output else 1.0
        ratio = {"input": by_input, "output": by_output, "reasoning": by_output}
        out: dict[str, float | None] = {}
        for kind in RATE_KINDS:
            given, below = getattr(self, kind), getattr(base, kind)
            out[kind] = given if given is not None or below is None else below * ratio.get(kind, by_input)
        return out


def _times(rates: dict[str, float | None], factor: float) -> dict[str, float | None]:
    return rates if factor == 1.0 else {k: None if v is None else v * factor for k, v in rates.items()}


STANDARD = "standard"
"""The tier a call is priced at unless its model's params name another (``service_tier``)."""


class PriceEntry(Rates):
    """One model's prices plus the provider ids (litellm model ids) that share them.

    ``tiers`` overrides the table's tier multipliers for this model (a provider without a batch
    tier, say, is given ``{}`` and a tier it lacks is refused). ``long_context``: the rates of a call
    whose prompt is above a threshold, where the provider bills one (a tier scales them too).
    """

    aliases: tuple[str, ...] = ()
    source: str = "apiflow pinned estimate"
    tiers: dict[str, float] | None = None
    long_context: LongContextEntry | None = None


class _PriceFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    currency: str = "USD"
    unit: str = "per_1m_tokens"
    note: str = ""
    tiers: dict[str, float] = Field(default_factory=dict)
    """Service tiers besides ``standard`` and what each costs relative to it (batch 0.5, priority 2)."""
    models: dict[str, PriceEntry]


class TokenCounts(Protocol):
    """Anything with token counts by kind (``TokensDetail``, ``Usage``); a ``cache_write_1h`` count,
    where there is one, is read too (``write_1h``)."""

    @property
    def input(self) -> int: ...
    @property
    def output(self) -> int: ...
    @property
    def cache_read(self) -> int: ...
    @property
    def cache_write(self) -> int: ...
    @property
    def reasoning(self) -> int: ...


def write_1h(tokens: TokenCounts) -> int:
    """The one-hour part of ``tokens.cache_write`` (0 for counts that do not carry it; never more than
    the writes it is a part of)."""
    return min(int(getattr(tokens, WRITE_1H, 0) or 0), tokens.cache_write)


def prompt_tokens(tokens: TokenCounts) -> int:
    """The prompt a call sent, as a long-context threshold counts it: input, cache reads and writes."""
    return tokens.input + tokens.cache_read + tokens.cache_write


@dataclass(frozen=True)
class PriceTable:
    """A loaded price table.

    Attributes:
        version: The table's own version label (``2027-01``).
        hash: sha256 hex of the file's bytes (what the run manifest pins).
        path: Where it was read from.
        entries: Model key (slug, litellm id or ``fnmatch`` pattern such as ``apiflow/*``) -> prices.
    """

    version: str
    hash: str
    path: str
    entries: dict[str, PriceEntry]
    tiers: dict[str, float] = field(default_factory=dict)

    def price(self, model_slug: str, tier: str = STANDARD) -> Prices:
        """Prices for a model slug or provider id at a service tier, its long-context rates with them,
        and (``Prices.at_tier``) its prices at the entry's other tiers, for calls served at another.

        Lookup order: exact key, then alias (litellm id), then the first matching
        pattern key. An unknown model is a usage error: pricing it at zero would let
        a budget cap silently never bind; so is a tier the table (or the model's entry) lacks.
        """
        entry = self._entry(model_slug)
        tiers = self.tiers if entry.tiers is None else entry.tiers
        if tier != STANDARD and tier not in tiers:
            known = ", ".join([STANDARD, *tiers])
            raise UsageError(
                f"price table {self.version} has no {tier!r} tier for {model_slug!r} (known: {known})"
            )
        prices = _priced(entry, 1.0 if tier == STANDARD else tiers[tier])
        if any(getattr(entry, kind) for kind in RATE_KINDS):  # a free model is free at every tier
            others = {**tiers, STANDARD: 1.0}
            prices._tiers = {name: _priced(entry, factor) for name, factor in others.items() if name != tier}
        return prices

    def _entry(self, model_slug: str) -> PriceEntry:
        entry = self.entries.get(model_slug)
        if entry is None:
            entry = self._aliases().get(model_slug)
        if entry is None:
            for key, candidate in self.entries.items():
                if any(ch in key for ch in "*?[") and fnmatch.fnmatchcase(model_slug, key):
                    entry = candidate
                    break
        if entry is None:
            raise UsageError(f"no price for model {model_slug!r} in price table {self.version} ({self.path})")
        return entry

    def has(self, model_slug: str) -> bool:
        """True when ``price`` would find the model."""
        try:
            self.price(model_slug)
        except UsageError:
            return False
        return True

    def _aliases(self) -> dict[str, PriceEntry]:
        return {alias: entry for entry in self.entries.values() for alias in entry.aliases}


def _priced(entry: PriceEntry, factor: float) -> Prices:
    """An entry's rates times a tier's factor; the factor applies above a long-context threshold too."""
    long, rule = None, entry.long_context
    if rule is not None:
        above = _times(rule.rates(entry), factor)
        long = LongContextRates.model_validate({"above_input_tokens": rule.above_input_tokens, **above})
    base = _times({kind: getattr(entry, kind) for kind in RATE_KINDS}, factor)
    return Prices.model_validate({**base, "long_context": long})


def load_price_table(path: str | Path = DEFAULT_PRICE_TABLE) -> PriceTable:
    """Read and validate a price table YAML.

    Args:
        path: The YAML file, or a shipped table's version (``2027-01``: ``apiflow.resources``).

    Returns:
        The table, with the sha256 of the exact bytes read.

    Raises:
        UsageError: The file is missing or not a valid price table.
    """
    path = resolve("prices", path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read price table {path}: {exc.strerror}") from exc
    data: Any = yaml.safe_load(raw)
    try:
        parsed = _PriceFile.model_validate(data)
    except ValueError as exc:
        first = str(exc).splitlines()[0:3]
        raise UsageError(f"invalid price table {path}: {' '.join(first)}") from exc
    return PriceTable(
        version=parsed.version,
        hash=hashlib.sha256(raw).hexdigest(),
        path=str(path),
        entries=dict(parsed.models),
        tiers=dict(parsed.tiers),
    )


def _usd(tokens: TokenCounts, rates: Rates) -> float:
    total = sum(getattr(tokens, kind) * getattr(rates, kind) for kind in PRICE_KINDS)
    hour = write_1h(tokens)
    if hour and rates.cache_write_1h is not None:  # the one-hour part of the writes, at its own rate
        total += hour * (rates.cache_write_1h - rates.cache_write)
    return total / 1_000_000


def cost_usd(tokens: TokenCounts, prices: Rates) -> float:
    """Dollar cost of token counts at the base (not long-context) rates.

    Exact for one call below its model's long-context threshold, and for any sum of such calls: one-hour
    writes are priced apart, which a sum keeps. A sum cannot say which of its calls crossed a
    threshold, so this never applies long-context rates: price calls with ``call_cost_usd``. So a
    trial's recorded cost (priced call by call when it ran) wins over re-pricing its row's sums.

    Args:
        tokens: Counts by kind; kinds are disjoint (reasoning not inside output), ``cache_write_1h``
            (when the counts carry it) a part of ``cache_write``.
        prices: USD per one million tokens of each kind.

    Returns:
        The cost in USD, rounded to 1e-9 so that sums are reproducible.
    """
    return round(_usd(tokens, prices), 9)


def call_cost_usd(usage: TokenCounts, prices: Prices, tier: str | None = None) -> float:
    """Dollar cost of ONE model call: at the long-context rates when its prompt is above its model's
    threshold (the provider bills the whole call at them), else at the base rates; at the ``tier`` the
    provider said it served the call at when ``prices`` know it, else at the tier asked for
    (``Prices.at_tier``)."""
    prices = prices.at_tier(tier)
    lc = prices.long_context
    if lc is not None and prompt_tokens(usage) > lc.above_input_tokens:
        return round(_usd(usage, lc), 9)
    return round(_usd(usage, prices), 9)


def calls_cost_usd(calls: Iterable[TokenCounts], prices: Prices, tiers: Iterable[str | None] = ()) -> float:
    """Dollar cost of a trial from the usage of each of its calls (the threshold is per request), each
    at the tier its provider said served it (``tiers``, by position; a call without one, as asked).
    A float even for no calls (0.0), as ``cost_usd`` gives: a record writes ``0.0``, never ``0``."""
    served = itertools.chain(tiers, itertools.repeat(None))
    costs = (call_cost_usd(usage, prices, tier) for usage, tier in zip(calls, served, strict=False))
    return round(sum(costs, 0.0), 9)
