"""The screen evaluation's report section: its table, intervals over seeds and precision-recall plot.

``apiflow bank screen-eval`` writes ``screen_eval.json`` (docs/design/071); this module turns that
record into a report ``Section`` (``apiflow report ... --screen-eval FILE`` appends it to the
leaderboard and the HTML page, and ``screen-eval`` renders the same section as ``screen_eval.md``)
and draws ``screen_pr.png``. It reads the record only: nothing here replays or rescores trials.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

from apiflow.analysis.document import Section, Table
from apiflow.errors import UsageError

FIGURE = "screen_pr"
"""The section's figure name (``screen_pr.png`` beside the report)."""

# Two-sided 95 % Student t quantiles for 1-10 degrees of freedom; beyond, Hill's expansion
# around the normal quantile is within 1e-3 of the exact value.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def t975(dof: int) -> float:
    """The 97.5 % quantile of Student's t with ``dof`` degrees of freedom."""
    if dof <= len(_T975):
        return _T975[dof - 1]
    z = NormalDist().inv_cdf(0.975)
    return (
        z
        + (z**3 + z) / (4 * dof)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * dof**3)
    )


def over_seeds(scores: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per threshold and measure: mean over the seeds' splits, 95 % t-interval, min and max.

    A split where the measure is undefined (precision with nothing flagged) is left out and the
    count of splits used says so; one split gives no interval.
    """
    out = []
    for threshold in sorted({s["threshold"] for s in scores}):
        per_seed = [s for s in scores if s["seed"] is not None and s["threshold"] == threshold]
        for measure in ("precision", "recall"):
            values = [s[measure] for s in per_seed if s[measure] is not None]
            row: dict[str, Any] = {"threshold": threshold, "measure": measure, "splits": len(values)}
            row["mean"] = sum(values) / len(values) if values else None
            row["min"], row["max"] = (min(values), max(values)) if values else (None, None)
            row["ci95"] = None
            if len(values) > 1:
                mean = row["mean"]
                sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
                half = t975(len(values) - 1) * sd / math.sqrt(len(values))
                row["ci95"] = [max(0.0, mean - half), min(1.0, mean + half)]
            out.append(row)
    return out


def wilson(hits: int, n: int) -> list[float] | None:
    """95 % Wilson score interval of ``hits`` of ``n`` (None when ``n`` is 0)."""
    if n == 0:
        return None
    z = NormalDist().inv_cdf(0.975)
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def load_screen_eval(path: str | Path) -> dict[str, Any]:
    """A ``screen_eval.json`` record, or a one-line UsageError saying why it cannot be used."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"--screen-eval {path}: cannot read ({error.strerror or error})") from None
    except ValueError:
        raise UsageError(f"--screen-eval {path}: not JSON") from None
    needed = ("seeds", "models", "epochs", "trials", "scores")
    if not isinstance(record, dict) or any(k not in record for k in needed):
        raise UsageError(
            f"--screen-eval {path}: not a screen_eval.json (written by `apiflow bank screen-eval`)"
        )
    return record


def screen_summary(record: dict[str, Any]) -> dict[str, Any]:
    """What a report's ``summary.json`` keeps of the record: the run and its scores, not the per-cell lists."""
    keep = (
        "seeds",
        "models",
        "epochs",
        "worlds",
        "per_world",
        "panel_fit_sha256",
        "trials",
        "harness_trials",
    )
    return {
        **{k: record.get(k) for k in keep},
        "scores": record["scores"],
        "over_seeds": record.get("over_seeds") or over_seeds(record["scores"]),
    }


def _wilson_text(hits: int, n: int) -> str:
    ci = wilson(hits, n)
    return "n/a" if ci is None else f"{hits}/{n} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _label(threshold: int) -> str:
    return "0" if threshold == 0 else f"<={threshold}"


def _interval(row: dict[str, Any], seeds: int) -> str:
    """Mean [95 % interval], with the number of splits used when some had the measure undefined."""
    if row["mean"] is None:
        return "n/a"
    ci = row["ci95"]
    text = f"{row['mean']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    return text + (f" ({row['splits']} of {seeds} splits)" if row["splits"] != seeds else "")


def _header(record: dict[str, Any]) -> str:
    models = record["models"]
    fit = record.get("panel_fit_sha256")
    harness = record.get("harness_trials")
    return (
        f"{len(record['seeds'])} planted split(s) (seeds {', '.join(map(str, record['seeds']))}; "
        f"{record.get('per_world', '?')} planted chain(s) per world; "
        f"{'all 13' if record.get('worlds') is None else record['worlds']} world(s)), "
        f"{len(models)} model(s) x {record['epochs']} epoch(s), {record['trials']:,} trials"
        + (f"; calibrated panel fit sha256 {fit[:12]}" if fit else "")
        + (
            f"; {harness:,} trial(s) ended in a harness fault (never a pass, not a model failure)"
            if harness
            else ""
        )
        + ". A chain cell is flagged when its passes over all of the panel's trials are at most the threshold; "
        "precision = planted flagged / flagged, recall = planted flagged / planted."
    )


def screen_eval_section(record: dict[str, Any]) -> Section:
    """The report section: per split and pooled, intervals over seeds, planted/good by chain length."""
    scores = record["scores"]
    table = Table(
        ["split", "passes per cell", "cells", "flagged", "planted", "planted flagged", "precision", "recall"],
        [
            [
                "pooled" if s["seed"] is None else f"s{s['seed']}p",
                _label(s["threshold"]),
                *(str(s[k]) for k in ("cells", "flagged", "planted", "hits")),
                _share(s["precision"]),
                _share(s["recall"]),
            ]
            for s in scores
        ],
    )
    tables = [table]
    paragraphs = [_header(record), "First table: each split and pooled (sums over the splits)."]
    seeds = len(record["seeds"])
    if seeds > 1:
        rows = record.get("over_seeds") or over_seeds(scores)
        pooled = {s["threshold"]: s for s in scores if s["seed"] is None}
        paragraphs.append(
            f"Second table, the intervals: over the {seeds} splits, mean and 95 % t-interval of the per-split "
            "figures (a split with nothing flagged has no precision and is left out; the count says so) and "
            "their range; pooled, the 95 % Wilson interval of planted flagged / flagged and / planted."
        )
        by_threshold = {(r["threshold"], r["measure"]): r for r in rows}
        tables.append(
            Table(
                [
                    "passes per cell",
                    "precision over splits",
                    "recall over splits",
                    "precision min-max",
                    "recall min-max",
                    "pooled precision (Wilson)",
                    "pooled recall (Wilson)",
                ],
                [
                    [
                        _label(t),
                        _interval(by_threshold[(t, "precision")], seeds),
                        _interval(by_threshold[(t, "recall")], seeds),
                        *(
                            "n/a"
                            if by_threshold[(t, m)]["min"] is None
                            else f"{by_threshold[(t, m)]['min']:.3f}-{by_threshold[(t, m)]['max']:.3f}"
                            for m in ("precision", "recall")
                        ),
                        _wilson_text(pooled[t]["hits"], pooled[t]["flagged"]),
                        _wilson_text(pooled[t]["hits"], pooled[t]["planted"]),
                    ]
                    for t in sorted({r["threshold"] for r in rows})
                ],
            )
        )
    bands, thresholds = record.get("by_length") or [], record.get("thresholds") or []
    if bands:
        paragraphs.append(
            "Last table, by chain length: planted and good cells, and how many of each are flagged "
            "(planted / good) at each threshold."
        )
        tables.append(
            Table(
                ["chain length", "planted", "good", *(f"flagged at {_label(t)}" for t in thresholds)],
                [
                    [
                        b["lengths"],
                        str(b["planted"]),
                        str(b["good"]),
                        *(
                            f"{b[f'planted_flagged_at_{t}']} / {b[f'good_flagged_at_{t}']}"
                            for t in thresholds
                        ),
                    ]
                    for b in bands
                ],
            )
        )
    return Section("Screen precision and recall (planted underspecified cells)", paragraphs, tables, [FIGURE])


def pr_plot(record: dict[str, Any], path: Path) -> Path:
    """Precision against recall: one point per split and threshold, the pooled points joined."""
    import matplotlib

    matplotlib.use("Agg")  # no display: figures are files
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for s in record["scores"]:
        if s["seed"] is None or s["precision"] is None or s["recall"] is None:
            continue
        ax.scatter(s["recall"], s["precision"], s=18, color="0.6", zorder=2)
    pooled = [s for s in record["scores"] if s["seed"] is None and s["precision"] is not None]
    if pooled:
        ax.plot(
            [s["recall"] for s in pooled],
            [s["precision"] for s in pooled],
            "o-",
            color="C0",
            zorder=3,
            label="pooled over splits",
        )
        dy, last = 2, None
        for s in pooled:  # a label next to a close earlier point steps down, so both stay readable
            near = last is not None and abs(s["recall"] - last[0]) + abs(s["precision"] - last[1]) < 0.08
            dy, last = (dy - 11 if near else 2), (s["recall"], s["precision"])
            ax.annotate(
                f"passes {_label(s['threshold'])}",
                (s["recall"], s["precision"]),
                textcoords="offset points",
                xytext=(8, dy),
                fontsize=8,
            )
    ax.scatter([], [], s=18, color="0.6", label="one split")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("recall (planted cells flagged)")
    ax.set_ylabel("precision (flagged cells planted)")
    ax.set_title(f"Zero-pass screen on planted chains ({len(record['models'])} models)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
