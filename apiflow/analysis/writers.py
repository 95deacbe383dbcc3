"""Render a report: summary.json, leaderboard.md, self-contained report.html, terminal leaderboard."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table as RichTable

from apiflow.analysis.document import BOTH_RATES, Section, Table, leaderboard_table
from apiflow.analysis.served import served_flag_line

FIGURE_CAPTIONS = {
    "pass_vs_length": "Chain pass rate vs length with the null-model curve and 90% bands",
    "reach_reliability": "Reach vs reliability per model",
    "cost_pareto": "Cost vs pass rate with the Pareto frontier",
    "world_model_heatmap": "World × model pass rates",
    "screen_pr": "Precision and recall of the cell screen on planted underspecified chains",
}


def write_summary(summary: dict, path: Path) -> None:
    """``summary.json``: every number, stable key order, NaN never written."""
    path.write_text(
        json.dumps(summary, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8"
    )


def _md_table(table: Table) -> list[str]:
    def cells(row: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"

    return [cells(table.header), "|" + "---|" * len(table.header), *(cells(r) for r in table.rows), ""]


def render_markdown(sections: list[Section], title: str) -> str:
    """The whole report as Markdown (figures referenced as sibling PNG files)."""
    lines = [f"# {title}", ""]
    for section in sections:
        lines += [f"## {section.title}", ""]
        for paragraph in section.paragraphs:
            lines += [paragraph, ""]
        for table in section.tables:
            lines += _md_table(table)
        for name in section.figures:
            lines += [f"![{FIGURE_CAPTIONS.get(name, name)}]({name}.png)", ""]
    return "\n".join(lines)


_CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3} td:first-child,td:nth-child(2){text-align:left}
img{max-width:100%;border:1px solid #eee} figcaption{font-size:12px;color:#555}
"""


def render_html(sections: list[Section], title: str, figures: dict[str, Path]) -> str:
    """The whole report as one HTML page with the PNGs embedded (no network, no sibling files)."""
    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{esc(title)}</h1>"]  # fmt: skip
    for section in sections:
        parts.append(f"<h2>{esc(section.title)}</h2>")
        parts += [f"<p>{esc(p)}</p>" for p in section.paragraphs]
        for table in section.tables:
            head = "".join(f"<th>{esc(h)}</th>" for h in table.header)
            body = "".join(
                "<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in table.rows
            )
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        for name in section.figures:
            if name in figures:
                data = base64.b64encode(figures[name].read_bytes()).decode("ascii")
                caption = esc(FIGURE_CAPTIONS.get(name, name))
                parts.append(
                    f"<figure><img alt='{caption}' src='data:image/png;base64,{data}'><figcaption>{caption}</figcaption></figure>"
                )
    parts.append("</body></html>")
    return "\n".join(parts)


def print_leaderboard(summary: dict, console: Console | None = None, limit: int = 30) -> None:
    """A short leaderboard in the terminal."""
    if console is None:
        console = Console()
        if not console.is_terminal:  # piped or logged: do not squeeze the table into 80 columns
            console = Console(width=140)
    table = leaderboard_table(summary)
    # The rate slices, then both convention-free rates (document.BOTH_RATES), under short names.
    keep = [0, 1, 2, 3, 4, 5] + ([6, 7] if summary["headline"]["length"] else [])
    keep += [table.header.index(name) for name in BOTH_RATES]
    rich_table = RichTable(
        title="apiflow leaderboard (pass rate, 90% world-bootstrap CI)", title_justify="left"
    )
    short = dict(zip(BOTH_RATES, ("scored only", "unscored=fail"), strict=True))
    headers = ["#", "model", "pass rate", "90% CI"] + [short.get(table.header[i], table.header[i]) for i in keep[3:]]
    for i, header in enumerate(headers):
        rich_table.add_column(header, justify="left" if i == 1 else "right", no_wrap=True)
    for row in table.rows[:limit]:
        rate, _, band = row[2].partition(" ")
        rich_table.add_row(
            row[0], row[1], rate, band.strip("[]").replace(", ", "–"), *(row[i] for i in keep[3:])
        )
    console.print(rich_table)
    meta = summary["meta"]
    console.print(
        f"{meta['trials']:,} trials ({meta['counted_trials']:,} counted, {meta['unscored']['total']} unscored); "
        f"convention: {meta['convention']}"
    )
    outcomes = summary.get("outcomes")
    if outcomes and outcomes["flagged"]:
        console.print(
            f"⚑ more than {100 * outcomes['flag_share']:.0f}% of trials unscored: "
            + ", ".join(
                f"{m} {outcomes['models'][m]['unscored']}/{outcomes['models'][m]['trials']}"
                f" ({100 * outcomes['models'][m]['unscored_share']:.1f}%)"
                for m in outcomes["flagged"]
            )
        )
    served = served_flag_line(summary, pointer=False)
    if served:
        console.print(served)
