"""``apiflow report``: load trials, compute the summary, write every output."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apiflow.analysis.adaptive_section import adaptive_section, load_sweep, sweep_summary
from apiflow.analysis.figures import write_figures
from apiflow.analysis.screen_section import (
    FIGURE,
    load_screen_eval,
    pr_plot,
    screen_eval_section,
    screen_summary,
)
from apiflow.analysis.sections import build_sections
from apiflow.analysis.summary import ReportOptions, summarize
from apiflow.analysis.table import load_table
from apiflow.analysis.trials import select_rows, trials_from_table
from apiflow.analysis.writers import render_html, render_markdown, write_summary


@dataclass(frozen=True)
class ReportFiles:
    """Where a report was written."""

    summary: Path
    leaderboard: Path
    html: Path
    figures: dict[str, Path]


def build_report(
    inputs: Sequence[str],
    out_dir: Path,
    *,
    panel: str | None = None,
    models: Sequence[str] | None = None,
    count_unscored: bool = False,
    options: ReportOptions | None = None,
    screen_eval: str | Path | None = None,
) -> tuple[dict, ReportFiles]:
    """Compute the summary of ``inputs`` and write summary.json, leaderboard.md, report.html and PNGs.

    ``screen_eval``: a ``screen_eval.json`` of ``apiflow bank screen-eval``; its section (table and
    precision-recall plot, ``apiflow.analysis.screen_section``) is appended and its scores go to
    ``summary["screen_eval"]``.

    Raises:
        UsageError: unreadable input, unknown panel/model, no trials left, unusable screen_eval file.
    """
    screen = load_screen_eval(screen_eval) if screen_eval is not None else None
    raw = load_table(inputs)
    table = select_rows(raw, panel=panel, models=models)
    trials = trials_from_table(table, count_unscored=count_unscored)
    summary = summarize(trials, options or ReportOptions())
    sweep = load_sweep(inputs)  # an adaptive grid's folder: its sweep's section (docs/design/051 §5)
    if sweep is not None:
        summary["adaptive"] = sweep_summary(sweep, raw)
    summary["meta"]["inputs"] = [str(i) for i in inputs]
    summary["meta"]["filters"] = {"panel": panel, "models": list(models) if models else None}
    if screen is not None:
        summary["screen_eval"] = {"source": str(screen_eval), **screen_summary(screen)}
    out_dir.mkdir(parents=True, exist_ok=True)
    files = ReportFiles(
        summary=out_dir / "summary.json",
        leaderboard=out_dir / "leaderboard.md",
        html=out_dir / "report.html",
        figures=write_figures(summary, out_dir),
    )
    write_summary(summary, files.summary)
    title = "apiflow report" + (f" — panel {panel}" if panel else "")
    sections = build_sections(summary)
    if sweep is not None:
        sections.insert(1, adaptive_section(summary))
    if screen is not None:
        sections.append(screen_eval_section(screen))
        files.figures[FIGURE] = pr_plot(screen, out_dir / f"{FIGURE}.png")
    files.leaderboard.write_text(render_markdown(sections, title), encoding="utf-8")
    files.html.write_text(render_html(sections, title, files.figures), encoding="utf-8")
    return summary, files
