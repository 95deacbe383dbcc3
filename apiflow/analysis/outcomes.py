"""Harness and provider outcomes per model, and the flag on models with too many unscored trials.

A model must not be able to turn its own failures into unscored trials, and a provider that failed
one model more than another must not go unnoticed: an unscored trial is out of every denominator
(unless ``--count-unscored``), so a model whose failures happen to end as harness outcomes would
look better than it is. The report therefore shows, for every model, how many of its trials were
unscored, by termination and by kind (the exception class), flags a model with more than
``FLAG_SHARE`` of its trials unscored, and gives its pass rate both ways, on scored trials and with
every unscored trial as a failure, whatever the convention in force (docs/design/045-secrets-and-unscored.md).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from apiflow.analysis.trials import Trials

FLAG_SHARE = 0.01
"""A model with more than this share of its trials unscored is flagged (strictly more: 1 in 100 is not)."""

TERMINATIONS = ("provider_error", "harness_error", "no_verdict")
"""How an unscored trial ended: our two harness outcomes, or no verdict (the published unscored rows)."""

_WRAPPERS = frozenset({"LiteLLMProviderError", "LiteLLMHarnessFault", "ProviderError"})
"""Our own wrapper classes: the kind is the class they wrap (``LiteLLMProviderError: RateLimitError: …``)."""

_LEADING_CLASS = re.compile(r"([A-Za-z_][\w.]*):\s")


def kind_of(harness_error: str | None) -> str:
    """The fault class named at the start of a recorded ``harness_error`` (``RateLimitError``, ``BudgetReached``).

    Our records write ``<Class>: <message>``, a provider fault ``LiteLLMProviderError: <litellm class>: …``;
    the first class that is not one of our wrappers is the kind. Text without a class is ``unknown``.
    """
    text = harness_error or ""
    position = 0
    while match := _LEADING_CLASS.match(text, position):
        name = match[1].rsplit(".", 1)[-1]
        if name not in _WRAPPERS:
            return name
        position = match.end()
    return "unknown"


def _termination(trials: Trials, index: int) -> str:
    termination = str(trials.columns["termination"][index])
    if trials.harness[index] and termination in TERMINATIONS:
        return termination
    return "harness_error" if trials.harness[index] else "no_verdict"


def _count(n: int, total: int) -> dict:
    return {"count": n, "share": n / total if total else 0.0}


def _rate(passes: int, trials: int) -> float | None:
    return passes / trials if trials else None


def outcome_table(trials: Trials) -> dict:
    """``summary["outcomes"]``: per model, its unscored trials by termination and by kind, the flag,
    and both pass rates.

    Shares are of the model's trials in the analysed set (every trial, whatever the convention:
    the flag is about the data, not about the denominators ``--count-unscored`` chooses). So are the
    two rates: ``pass_rate_scored`` (passes / scored trials) and ``pass_rate_unscored_as_fail``
    (passes / every trial), side by side so that failures ending as unscored trials cannot flatter.
    """
    totals = np.bincount(trials.model, minlength=len(trials.models))
    passes = np.bincount(trials.model, weights=trials.passed, minlength=len(trials.models))
    scored = np.bincount(trials.model, weights=trials.scored, minlength=len(trials.models))
    errors = trials.columns.get("harness_error")
    terminations: list[Counter[str]] = [Counter() for _ in trials.models]
    kinds: list[Counter[str]] = [Counter() for _ in trials.models]
    for i in np.flatnonzero(trials.unscored):
        m = int(trials.model[i])
        how = _termination(trials, int(i))
        terminations[m][how] += 1
        kinds[m]["no verdict" if how == "no_verdict" else kind_of(None if errors is None else errors[i])] += 1
    models = {}
    for m, name in enumerate(trials.models):
        total, unscored = int(totals[m]), sum(terminations[m].values())
        share = unscored / total if total else 0.0
        models[name] = {
            "trials": total,
            "unscored": unscored,
            "unscored_share": share,
            "flagged": share > FLAG_SHARE,
            "passes": int(passes[m]),
            "scored": int(scored[m]),
            "pass_rate_scored": _rate(int(passes[m]), int(scored[m])),
            "pass_rate_unscored_as_fail": _rate(int(passes[m]), total),
            "by_termination": {t: _count(terminations[m][t], total) for t in TERMINATIONS},
            "by_kind": {k: _count(n, total) for k, n in sorted(kinds[m].items(), key=lambda kv: (-kv[1], kv[0]))},
        }
    return {
        "flag_share": FLAG_SHARE,
        "convention": "count_unscored" if trials.count_unscored else "scored_only",
        "flagged": [name for name, entry in models.items() if entry["flagged"]],
        "models": models,
    }
