"""The screen evaluation's report section (markdown) and its precision-recall plot (PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: figures are files
import matplotlib.pyplot as plt  # noqa: E402


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _label(threshold: int) -> str:
    return "0" if threshold == 0 else f"<={threshold}"


def markdown(record: dict[str, Any], png: str) -> str:
    """The report section: what was run, then one row per split and threshold, pooled last."""
    models = record["models"]
    head = (
        "## Screen precision and recall (planted underspecified cells)\n\n"
        f"{len(record['seeds'])} planted split(s) (seeds {', '.join(map(str, record['seeds']))}; "
        f"{record['per_world']} planted chain(s) per world; "
        f"{'all 13' if record['worlds'] is None else record['worlds']} world(s)), "
        f"{len(models)} model(s) x {record['epochs']} epoch(s), {record['trials']:,} trials. "
        "A chain cell is flagged when its passes over all of the panel's trials are at most the threshold; "
        "precision = planted flagged / flagged, recall = planted flagged / planted.\n\n"
        "| split | passes per cell | cells | flagged | planted | planted flagged | precision | recall |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for s in record["scores"]:
        split = "pooled" if s["seed"] is None else f"s{s['seed']}p"
        rows.append(
            f"| {split} | {_label(s['threshold'])} | {s['cells']} | {s['flagged']} | {s['planted']} | {s['hits']} "
            f"| {_share(s['precision'])} | {_share(s['recall'])} |"
        )
    bands, thresholds = record.get("by_length") or [], record.get("thresholds") or []
    tail = ""
    if bands:
        tail = (
            "\n\nBy chain length: planted and good cells, and how many of each are flagged (planted / good) "
            "at each threshold:\n\n| chain length | planted | good | "
            + " | ".join(f"flagged at {_label(t)}" for t in thresholds)
            + " |\n|---|---|---|"
            + "---|" * len(thresholds)
            + "\n"
            + "\n".join(
                f"| {b['lengths']} | {b['planted']} | {b['good']} | "
                + " | ".join(
                    f"{b[f'planted_flagged_at_{t}']} / {b[f'good_flagged_at_{t}']}" for t in thresholds
                )
                + " |"
                for b in bands
            )
        )
    return head + "\n".join(rows) + tail + f"\n\n![precision and recall of the screen]({png})\n"


def pr_plot(record: dict[str, Any], path: Path) -> None:
    """Precision against recall: one point per split and threshold, the pooled points joined."""
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
        for s in pooled:
            ax.annotate(
                f"passes {_label(s['threshold'])}",
                (s["recall"], s["precision"]),
                textcoords="offset points",
                xytext=(6, 4),
                fontsize=8,
            )
    ax.scatter([], [], s=18, color="0.6", label="one split")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("recall (planted cells flagged)")
    ax.set_ylabel("precision (flagged cells planted)")
    ax.set_title("Zero-pass screen on planted underspecified chains")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
