"""The report's PNG figures, drawn from ``summary.json`` alone (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: figures are files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

DPI = 110
FIGURES = ("pass_vs_length", "reach_reliability", "cost_pareto", "world_model_heatmap")


def _pct(x) -> float:
    return np.nan if x is None else 100.0 * x


def pass_vs_length(summary: dict, path: Path) -> None:
    """Observed chain pass rate by length (inclusive, clean) with 90% bands, and the null model."""
    lengths = sorted(int(k) for k in summary["pass_rates"]["by_length"])
    fig, ax = plt.subplots(figsize=(8, 5.6))
    styles = {"inclusive": ("tab:blue", "o"), "clean": ("tab:green", "s")}
    for variant, (color, marker) in styles.items():
        rows = [summary["pass_rates"]["by_length"][str(k)][variant] for k in lengths]
        rate = [_pct(r["rate"]) for r in rows]
        low = [_pct(r["ci90"][0]) for r in rows]
        high = [_pct(r["ci90"][1]) for r in rows]
        ax.plot(lengths, rate, marker=marker, color=color, label=f"observed ({variant})")
        ax.fill_between(
            lengths, low, high, color=color, alpha=0.15, label=f"90% world-bootstrap CI ({variant})"
        )
        null = [summary["null_model"]["by_length"][str(k)][variant]["predicted"] for k in lengths]
        ax.plot(
            lengths,
            [_pct(x) for x in null],
            linestyle="--",
            color=color,
            label=f"independent-error null ({variant})",
        )
    solo = summary["pass_rates"]["solo"]["rate"]
    if solo is not None:
        ax.axhline(100 * solo, color="grey", linestyle=":", label=f"solo tasks ({100 * solo:.1f}%)")
    ax.set_xlabel("chain length K (steps in one trial)")
    ax.set_ylabel("pass rate (% of counted trials)")
    ax.set_ylim(0, 100)
    if lengths:
        ax.set_xticks(lengths)
    ax.set_title("Chain pass rate vs length: observed and independent-error prediction")
    ax.grid(alpha=0.3)
    fig.legend(fontsize=7, loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))  # room for the legend under the axes
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def reach_reliability(summary: dict, path: Path) -> None:
    """Per model: all-E-of-E (reliability) to best-of-E (reach), with pass@1 between them."""
    reach = summary["reach"]
    epochs = reach["epochs"]
    models = sorted(reach["models"], key=lambda m: reach["models"][m]["best_of"]["value"])
    height = 0.32 * len(models) + 2.0
    fig, ax = plt.subplots(figsize=(8, height))
    y = np.arange(len(models))
    best = [100 * reach["models"][m]["best_of"]["value"] for m in models]
    every = [100 * reach["models"][m]["all_of"]["value"] for m in models]
    one = [100 * reach["models"][m].get("pass@1", {"value": np.nan})["value"] for m in models]
    ax.hlines(y, every, best, color="lightgrey", linewidth=3)
    ax.scatter(best, y, color="tab:blue", zorder=3, label=f"reach: best-of-{epochs} (pass@{epochs})")
    ax.scatter(one, y, color="tab:grey", marker="|", s=120, zorder=3, label="pass@1 (per-trial rate)")
    ax.scatter(
        every, y, color="tab:red", zorder=3, label=f"reliability: all-{epochs}-of-{epochs} (pass^{epochs})"
    )
    ax.set_yticks(y, models, fontsize=8)
    ax.set_xlabel("% of tasks")
    low = min([v for v in every + one if v == v] or [0.0])
    ax.set_xlim(max(0.0, 10 * np.floor(low / 10) - 5) - 1.5, 101.5)
    ax.set_ylim(-0.6, len(models) - 0.4)
    ax.set_title("Reach vs reliability per model")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=7, loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def cost_pareto(summary: dict, path: Path) -> None:
    """Mean cost per trial vs pass rate per model, with the Pareto frontier.

    Points carry numbers (rank by pass rate) keyed to model names at the right: with two dozen
    models, names written beside the points would overlap.
    """
    rows = [r for r in summary["cost"]["models"] if r["mean_usd_per_trial"] and r["pass_rate"] is not None]
    rows.sort(key=lambda r: -r["pass_rate"])
    fig, ax = plt.subplots(figsize=(11, 6))
    if rows:
        frontier = set(summary["cost"]["pareto_frontier"])
        key = []
        for number, r in enumerate(rows, 1):
            on = r["model"] in frontier
            x, y = r["mean_usd_per_trial"], 100 * r["pass_rate"]
            ax.scatter(x, y, color="tab:orange" if on else "tab:blue", zorder=3)
            ax.annotate(str(number), (x, y), fontsize=7, xytext=(4, 3), textcoords="offset points")
            key.append(f"{number:>2}  {r['model']}{'  *' if on else ''}")
        line = sorted((r["mean_usd_per_trial"], 100 * r["pass_rate"]) for r in rows if r["model"] in frontier)
        ax.step(
            [c for c, _ in line],
            [p for _, p in line],
            where="post",
            color="tab:orange",
            label="Pareto frontier (*)",
        )
        ax.set_xscale("log")
        ax.legend(fontsize=8, loc="lower right")
        ax.text(1.02, 1.0, "\n".join(key), transform=ax.transAxes, fontsize=7, va="top", family="monospace")
    else:
        free = any(r["mean_usd_per_trial"] == 0.0 for r in summary["cost"]["models"])
        message = "every priced trial cost $0 (offline models)" if free else "no priced trials"
        ax.text(0.5, 0.5, message, ha="center", transform=ax.transAxes)
    source = summary["cost"]["source"]
    ax.set_xlabel(f"mean cost per trial (USD, log scale; {source})")
    ax.set_ylabel("pass rate (% of counted trials)")
    ax.set_title("Cost vs pass rate")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout(rect=(0, 0, 0.78, 1))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def world_model_heatmap(summary: dict, path: Path) -> None:
    """Pass rate per world x model over all counted trials."""
    table = summary["variation"]["world_model_pass_rate"]
    worlds = list(table)
    models = sorted(summary["meta"]["models"])
    grid = np.array([[_pct(table[w].get(m)) for m in models] for w in worlds])
    fig, ax = plt.subplots(figsize=(0.45 * len(models) + 2.5, 0.4 * len(worlds) + 2.2))
    image = ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=100, aspect="auto")
    for (i, j), value in np.ndenumerate(grid):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=6)
    ax.set_xticks(range(len(models)), models, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(worlds)), worlds, fontsize=8)
    ax.set_xlabel("model")
    ax.set_ylabel("world")
    ax.set_title("Pass rate (%) by world and model, all tasks")
    fig.colorbar(image, ax=ax, label="pass rate (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def write_figures(summary: dict, out_dir: Path) -> dict[str, Path]:
    """Draw every figure into ``out_dir``; returns name -> PNG path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    drawers = {
        "pass_vs_length": pass_vs_length,
        "reach_reliability": reach_reliability,
        "cost_pareto": cost_pareto,
        "world_model_heatmap": world_model_heatmap,
    }
    paths = {}
    for name, draw in drawers.items():
        path = out_dir / f"{name}.png"
        draw(summary, path)
        paths[name] = path
    return paths
