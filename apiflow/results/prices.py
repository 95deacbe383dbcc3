"""Pinned, versioned token prices and the cost of a trial computed from them.

Cost is ours, not the provider library's: a price table is a YAML file under
``configs/prices/`` whose sha256 goes into every run manifest, so a reported
dollar figure can always be traced to the exact prices it was computed with.
litellm's own ``response_cost`` is kept on the record only as a cross-check
(docs/design/041-prices-and-rows.md).
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field

from apiflow.errors import UsageError
from apiflow.resources import resolve, shipped

PRICE_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")
"""Token kinds priced separately. The kinds are disjoint: ``output`` excludes reasoning tokens."""

DEFAULT_PRICE_TABLE = shipped("configs/prices/2027-01.yaml")


class Prices(BaseModel):
    """USD per one million tokens of each kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0.0)
    output: float = Field(ge=0.0)
    cache_read: float = Field(ge=0.0)
    cache_write: float = Field(ge=0.0)
    reasoning: float = Field(ge=0.0)


STANDARD = "standard"
"""The tier a call is priced at unless its model's params name another (``service_tier``)."""


class PriceEntry(Prices):
    """One model's prices plus the provider ids (litellm model ids) that share them.

    ``tiers`` overrides the table's tier multipliers for this model (a provider without a batch
    tier, say, is given ``{}`` and a tier it lacks is refused).
    """

    aliases: tuple[str, ...] = ()
    source: str = "apiflow pinned estimate"
    tiers: dict[str, float] | None = None


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
    """Anything with token counts by kind (``TokensDetail``, ``Usage``)."""

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
        """Prices for a model slug or provider id at a service tier.

        Lookup order: exact key, then alias (litellm id), then the first matching
        pattern key. An unknown model is a usage error: pricing it at zero would let
        a budget cap silently never bind; so is a tier the table (or the model's entry) lacks.
        """
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
        factor = 1.0
        if tier != STANDARD:
            tiers = self.tiers if entry.tiers is None else entry.tiers
            if tier not in tiers:
                known = ", ".join([STANDARD, *tiers])
                raise UsageError(f"price table {self.version} has no {tier!r} tier for {model_slug!r} (known: {known})")
            factor = tiers[tier]
        return Prices(**{kind: getattr(entry, kind) * factor for kind in PRICE_KINDS})

    def has(self, model_slug: str) -> bool:
        """True when ``price`` would find the model."""
        try:
            self.price(model_slug)
        except UsageError:
            return False
        return True

    def _aliases(self) -> dict[str, PriceEntry]:
        return {alias: entry for entry in self.entries.values() for alias in entry.aliases}


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


def cost_usd(tokens: TokenCounts, prices: Prices) -> float:
    """Dollar cost of the given token counts at the given prices.

    Args:
        tokens: Counts by kind; kinds are disjoint (reasoning not inside output).
        prices: USD per one million tokens of each kind.

    Returns:
        The cost in USD, rounded to 1e-9 so that sums are reproducible.
    """
    total = sum(getattr(tokens, kind) * getattr(prices, kind) for kind in PRICE_KINDS)
    return round(total / 1_000_000, 9)
