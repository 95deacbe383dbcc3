"""What a trial of a model costs before it runs: token profiles fitted to the published corpus.

A trial's tokens depend most on the model (how it reasons, whether its provider caches) and on the
task's kind and length (a 20-step chain carries a long history). The published table
(``configs/panels/published-trials.parquet``) holds every trial's tokens, so the profile is kept per
(model, kind, length) cell: the mean of the four billed kinds and their covariance, the model calls a
trial makes and its wall time. A cost is then linear in the tokens (``prices · tokens``), so a
cell's mean cost and its spread follow for any price table without refitting.

Where a cell is thin, the estimate falls back, and says so (``Source``): to the model's trials of the
same kind scaled by the panel's length curve, then, for a model the corpus does not have, to the
panel's mean over models, whose interval includes the spread between models. Published Claude runs
cached their prompts (rolling breakpoints: ``apiflow.models.caching``); a grid that turns caching
off for a breakpoint route pays its cache reads and writes as input (``caching=False``).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow.parquet as pq

from apiflow.resources import shipped
from apiflow.results.prices import Prices

PUBLISHED_TABLE = shipped("configs/panels/published-trials.parquet")

KINDS = ("input", "output", "cache_read", "cache_write")
"""The billed token kinds a published row gives: ``input`` is uncached prompt, ``cache_read`` the
prompt read from cache, ``cache_write`` the rest of ``total`` (Claude's cache writes; 0 elsewhere)."""

MIN_CELL = 10
"""Fewer trials than this in a (model, kind, length) cell: the cell borrows from the model's kind."""

Z90 = 1.6448536269514722
"""The two-sided 90 % normal quantile: intervals are mean ± Z90 · sd."""

Source = Literal["cell", "model-kind", "panel"]

Vector = tuple[float, ...]
"""Four numbers, one per ``KINDS``."""


@dataclass(frozen=True, slots=True)
class Cell:
    """The published trials of one model, task kind and length.

    Attributes:
        n: Trials.
        mean: Mean tokens per trial, by ``KINDS``.
        cov: Their covariance (4 x 4, row-major), the trial-to-trial spread.
        calls: Mean model calls per trial (assistant turns).
        seconds: Mean wall time per trial.
    """

    n: int
    mean: Vector
    cov: tuple[float, ...]
    calls: float
    seconds: float

    def cost(self, prices: Prices, caching: bool = True) -> tuple[float, float]:
        """(mean, variance) of one trial's cost in USD under ``prices``."""
        weights = _weights(prices, caching)
        mean = sum(w * m for w, m in zip(weights, self.mean, strict=True)) / 1e6
        var = sum(weights[i] * weights[j] * self.cov[4 * i + j] for i in range(4) for j in range(4)) / 1e12
        return mean, max(var, 0.0)


def _weights(prices: Prices, caching: bool) -> Vector:
    """USD per million tokens of each of ``KINDS``; uncached, a cached prompt is paid as input."""
    if caching:
        return (prices.input, prices.output, prices.cache_read, prices.cache_write)
    return (prices.input, prices.output, prices.input, prices.input)


def _cell(rows: list[Vector], calls: list[float], seconds: list[float]) -> Cell:
    n = len(rows)
    mean = tuple(sum(r[k] for r in rows) / n for k in range(4))
    cov = [0.0] * 16
    if n > 1:
        for r in rows:
            d = [r[k] - mean[k] for k in range(4)]
            for i in range(4):
                for j in range(4):
                    cov[4 * i + j] += d[i] * d[j]
        cov = [c / (n - 1) for c in cov]
    return Cell(n, mean, tuple(cov), sum(calls) / n, sum(seconds) / n)


@functools.cache
def published_profile() -> TokenProfile:
    """The profile of the published table, fitted once per process (a constant of the shipped file:
    the dry-run estimate and the budget's admission read the same one)."""
    return TokenProfile.fit(published_rows())


def published_rows(path: str | Path = PUBLISHED_TABLE) -> list[dict[str, Any]]:
    """The published table's rows, with just the columns a profile reads."""
    columns = ["model", "model_api", "task_id", "kind", "length", "epoch", "tokens_input", "tokens_output"]
    columns += ["tokens_cache", "tokens_total", "n_messages", "duration_s"]
    return pq.read_table(path, columns=columns).to_pylist()


def tokens_of(row: Mapping[str, Any]) -> Vector:
    """A published row's tokens by ``KINDS`` (the write is what ``total`` holds beyond the rest)."""
    known = row["tokens_input"] + row["tokens_output"] + row["tokens_cache"]
    return (row["tokens_input"], row["tokens_output"], row["tokens_cache"], max(row["tokens_total"] - known, 0))


def calls_of(row: Mapping[str, Any]) -> float:
    """Model calls a published trial made: one assistant turn per two messages after system and user."""
    return max((row["n_messages"] - 1) // 2, 1)


@dataclass(frozen=True)
class TokenProfile:
    """Cells per (model, kind, length), per (model, kind) and, over models, per (kind, length).

    ``aliases`` maps each published ``model_api`` route to its model name, so a grid may name either.
    """

    cells: dict[tuple[str, str, int], Cell]
    kinds: dict[tuple[str, str], Cell]
    panel: dict[tuple[str, int], tuple[Cell, float]]
    """(kind, length) -> (the mean over models' cells, the variance between models' mean costs
    relative to the panel mean, squared: a fraction, used for a model the corpus lacks)."""
    aliases: dict[str, str]

    @property
    def trials(self) -> int:
        """Published trials the profile was fitted to."""
        return sum(cell.n for cell in self.cells.values())

    @classmethod
    def fit(cls, rows: Iterable[Mapping[str, Any]]) -> TokenProfile:
        groups: dict[tuple[str, str, int], list[tuple[Vector, float, float]]] = defaultdict(list)
        aliases: dict[str, str] = {}
        for row in rows:
            aliases[row["model_api"]] = row["model"]
            groups[(row["model"], row["kind"], row["length"])].append(
                (tokens_of(row), calls_of(row), row["duration_s"] or 0.0)
            )
        cells = {key: _cell(*_columns(items)) for key, items in groups.items()}
        by_kind: dict[tuple[str, str], list[tuple[Vector, float, float]]] = defaultdict(list)
        for (model, kind, _length), items in groups.items():
            by_kind[(model, kind)].extend(items)
        kinds = {key: _cell(*_columns(items)) for key, items in by_kind.items()}
        return cls(cells, kinds, _panel(cells), aliases)

    def model_name(self, model: str) -> str | None:
        """The corpus's name for a grid model (its slug or litellm route), None when the corpus lacks it."""
        if any(key[0] == model for key in self.kinds):
            return model
        return self.aliases.get(model)

    def cell(self, model: str | None, kind: str, length: int) -> tuple[Cell, Source]:
        """The profile of one trial, and where it came from."""
        if model is not None:
            cell = self.cells.get((model, kind, length))
            if cell is not None and cell.n >= MIN_CELL:
                return cell, "cell"
            whole = self.kinds.get((model, kind))
            if whole is not None:
                return _scaled(whole, self._length_factor(kind, length, model)), "model-kind"
        panel = self.panel.get((kind, length))
        if panel is None:
            panel = self.panel[max((k for k in self.panel if k[0] == kind), key=lambda k: k[1])]
        return panel[0], "panel"

    def _length_factor(self, kind: str, length: int, model: str) -> float:
        """The panel's tokens at this length relative to its mean over this model's lengths of ``kind``."""
        here = self.panel.get((kind, length))
        lengths = [k[2] for k in self.cells if k[0] == model and k[1] == kind]
        if here is None or not lengths:
            return 1.0
        mean = sum(sum(self.panel[(kind, n)][0].mean) for n in lengths if (kind, n) in self.panel) / len(lengths)
        return sum(here[0].mean) / mean if mean else 1.0


def _columns(items: list[tuple[Vector, float, float]]) -> tuple[list[Vector], list[float], list[float]]:
    return [i[0] for i in items], [i[1] for i in items], [i[2] for i in items]


def _scaled(cell: Cell, factor: float) -> Cell:
    return Cell(
        cell.n,
        tuple(m * factor for m in cell.mean),
        tuple(c * factor * factor for c in cell.cov),
        cell.calls * factor,
        cell.seconds * factor,
    )


def _panel(cells: dict[tuple[str, str, int], Cell]) -> dict[tuple[str, int], tuple[Cell, float]]:
    """Per (kind, length): the unweighted mean of the models' cells, and the between-model spread."""
    by_place: dict[tuple[str, int], list[Cell]] = defaultdict(list)
    for (_model, kind, length), cell in cells.items():
        by_place[(kind, length)].append(cell)
    out: dict[tuple[str, int], tuple[Cell, float]] = {}
    for place, found in by_place.items():
        k = len(found)
        mean = tuple(sum(c.mean[i] for c in found) / k for i in range(4))
        cov = tuple(sum(c.cov[i] for c in found) / k for i in range(16))
        totals = [sum(c.mean) for c in found]
        centre = sum(totals) / k
        spread = sum((t - centre) ** 2 for t in totals) / max(k - 1, 1) / centre**2 if centre else 0.0
        merged = Cell(sum(c.n for c in found), mean, cov, sum(c.calls for c in found) / k,
                      sum(c.seconds for c in found) / k)  # fmt: skip
        out[place] = (merged, spread)
    return out


@dataclass(frozen=True, slots=True)
class ModelEstimate:
    """The expected bill of one model's trials.

    Attributes:
        trials: Trials estimated.
        usd: Expected cost.
        low, high: The 90 % interval: trial-to-trial spread plus the uncertainty of each cell's mean
            (and, for a model the corpus lacks, the spread between models), normal approximation.
        calls: Expected model calls.
        prompt_tokens, output_tokens: Expected tokens (prompt: input, cache reads and writes).
        seconds: Expected trial wall time, summed over trials (divide by concurrency for elapsed).
        source: The coarsest fallback any of its trials needed.
    """

    trials: int
    usd: float
    low: float
    high: float
    calls: float
    prompt_tokens: float
    output_tokens: float
    seconds: float
    source: Source


_ORDER: dict[Source, int] = {"cell": 0, "model-kind": 1, "panel": 2}


def estimate(
    profile: TokenProfile,
    model: str,
    places: Iterable[tuple[str, int]],
    prices: Prices,
    *,
    caching: bool = True,
) -> ModelEstimate:
    """The bill of ``model``'s trials at ``places`` ((kind, length) per trial) under ``prices``.

    Args:
        profile: The fitted profile.
        model: The grid's slug or litellm route (looked up by ``TokenProfile.model_name``).
        places: One (kind, length) per planned trial.
        prices: The model's prices.
        caching: False when the grid turns prompt caching off on a route that caches only when asked.
    """
    name = profile.model_name(model)
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for place in places:
        counts[place] += 1
    usd = noise = mean_error = spread = calls = prompt = output = seconds = 0.0
    worst: Source = "cell"
    for (kind, length), n in counts.items():
        cell, source = profile.cell(name, kind, length)
        worst = max(worst, source, key=_ORDER.__getitem__)
        mean, var = cell.cost(prices, caching)
        usd += n * mean
        noise += n * var
        mean_error += n * n * var / cell.n
        if source == "panel":
            spread += n * mean * math.sqrt(profile.panel.get((kind, length), (cell, 0.0))[1])
        calls += n * cell.calls
        prompt += n * (cell.mean[0] + cell.mean[2] + cell.mean[3])
        output += n * cell.mean[1]
        seconds += n * cell.seconds
    sd = math.sqrt(noise + mean_error + spread * spread)
    trials = sum(counts.values())
    return ModelEstimate(
        trials, usd, max(usd - Z90 * sd, 0.0), usd + Z90 * sd, calls, prompt, output, seconds, worst
    )


def published_cost(rows: Iterable[Mapping[str, Any]], prices: Prices) -> float:
    """What the given published trials cost under ``prices`` (the figure an estimate is held against)."""
    weights = _weights(prices, True)
    return sum(sum(w * t for w, t in zip(weights, tokens_of(r), strict=True)) for r in rows) / 1e6
