"""The tables (``stability.md``) and plot (``rank_spread.png``) of ``apiflow panel stability``,
drawn from the JSON record alone (``stability.json``), so they can be redrawn without replay."""

from __future__ import annotations

import json
from pathlib import Path

from apiflow.analysis.document import Section, Table
from apiflow.analysis.writers import render_markdown
from apiflow.errors import UsageError


def _f(x: float | None, digits: int = 2) -> str:
    return "—" if x is None or x != x else f"{x:.{digits}f}"


def _rank(x: float) -> str:
    return f"{x:g}"


def markdown(record: dict) -> str:
    """The report: summary sentences, τ tables, per-model spread vs bootstrap, adjacent pairs."""
    s, setup = record["summary"], record.get("setup", {})
    splits = [sp["name"] for sp in record["splits"]]
    level = int(100 * record["bootstrap"]["level"])
    tau, within = record["tau"], record["tau_within"]
    summary = [
        f"Metric: {record['metric']}. {s['splits']} splits ({', '.join(splits)}; "
        f"{setup.get('worlds', '?')} worlds each, {setup.get('epochs', '?')} epoch(s), run seed "
        f"{setup.get('run_seed', '?')}), {s['models']} models. Bootstrap: {record['bootstrap']['resamples']:,} "
        f"world cluster resamples per split, seed {record['bootstrap']['seed']}, {level}% percentile intervals.",
        f"Kendall's τ-b between splits: mean {_f(tau['mean'])} (min {_f(tau['min'])}, max {_f(tau['max'])}); "
        f"between two world resamples of one split: mean {_f(within['mean'])}.",
        f"Rank SD across splits, mean over models: {_f(s['mean_rank_sd_across_splits'])}; "
        f"within-split bootstrap rank SD: {_f(s['mean_rank_sd_bootstrap'])} "
        f"(ratio {_f(s['sd_ratio'])}).",
        f"Coverage: a split's rank of a model falls inside another split's {level}% bootstrap rank interval "
        f"in {100 * s['coverage']:.0f}% of (split, other split, model) cases (about 75% is expected when "
        "regeneration and world sampling are the same noise, since both ranks vary); "
        f"{s['models_within_bootstrap_union']} of {s['models']} models stay inside the union of their intervals.",
        f"Adjacent pairs of the consensus order: split pairs disagree on their order {100 * _z(s['mean_flip_across_splits']):.0f}% "
        f"of the time on average, two world resamples of one split {100 * _z(s['mean_flip_bootstrap_pairs']):.0f}%; "
        f"a world resample reverses a split's own order {100 * _z(s['mean_flip_bootstrap']):.0f}%; "
        f"{s['adjacent_pairs_never_flipped']} of {s['models'] - 1} pairs keep their order in every split.",
    ]
    names = splits + list(record["references"])
    matrix = {(p["a"], p["b"]): p["tau_b"] for p in tau["pairs"]}
    rows = []
    for a in splits:
        row = [a]
        for b in splits:
            row.append("1" if a == b else _f(matrix.get((a, b), matrix.get((b, a)))))
        for ref in record["references"].values():
            row.append(_f(ref.get("tau_b_per_split", {}).get(a)))
        rows.append(row)
    consensus_row = ["consensus", *["" for _ in splits]]
    consensus_row += [_f(ref.get("tau_b_vs_consensus")) for ref in record["references"].values()]
    rows.append(consensus_row)
    sections = [
        Section("Summary", summary, figures=["rank_spread"]),
        Section(
            "Kendall's τ-b (splits, and each split vs the references)", tables=[Table(["", *names], rows)]
        ),
    ]
    header = ["model", "consensus", *splits, "min–max", "SD", "bootstrap SD", "coverage"]
    header += [f"{name} rank" for name in record["references"]]
    per_split = {sp["name"]: sp["models"] for sp in record["splits"]}
    rows = []
    for m in record["per_model"]:
        row = [m["model"], _rank(m["consensus_rank"])]
        for name in splits:
            e = per_split[name][m["model"]]
            row.append(f"{_rank(e['rank'])} [{_rank(e['rank_ci'][0])}–{_rank(e['rank_ci'][1])}]")
        row += [
            f"{_rank(m['rank_min'])}–{_rank(m['rank_max'])}",
            _f(m["rank_sd"]),
            _f(m["bootstrap_rank_sd"]),
            f"{100 * m['coverage']:.0f}%",
        ]
        row += [_rank(ref["ranks"][m["model"]]) if m["model"] in ref.get("ranks", {}) else "—"
                for ref in record["references"].values()]  # fmt: skip
        rows.append(row)
    sections.append(
        Section(
            f"Rank of every model (1 = best) with its within-split {level}% bootstrap interval",
            tables=[Table(header, rows)],
        )  # fmt: skip
    )
    rows = [
        [
            f"{p['upper']} > {p['lower']}",
            f"{100 * p['flip_across_splits']:.0f}%",
            f"{100 * p['reversed_vs_consensus']:.0f}%",
            f"{100 * p['flip_bootstrap_pairs']:.0f}%",
            f"{100 * p['flip_bootstrap']:.0f}%",
        ]
        for p in record["adjacent_pairs"]
    ]
    header = ["pair", "split pairs disagreeing", "splits reversing consensus",
              "resample pairs disagreeing", "resamples reversing the split"]  # fmt: skip
    sections.append(Section("Adjacent pairs of the consensus order", tables=[Table(header, rows)]))
    rows = [
        [m["model"], *[_f(per_split[n][m["model"]]["rate"], 3) for n in splits]] for m in record["per_model"]
    ]
    sections.append(Section("Pass rate per split", tables=[Table(["model", *splits], rows)]))
    return render_markdown(sections, "Ranking stability across regenerated private splits")


def _z(x: float | None) -> float:
    return 0.0 if x is None else x


def plot(record: dict, path: Path) -> None:
    """Each model's rank in every split (dots) over its bootstrap intervals (bars), consensus order."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the figure is a file
    import matplotlib.pyplot as plt

    models = [m["model"] for m in record["per_model"]]
    splits = record["splits"]
    fig, ax = plt.subplots(figsize=(9, 0.34 * len(models) + 1.6))
    width = 0.7 / max(len(splits), 1)
    for k, sp in enumerate(splits):
        offset = -0.35 + width * (k + 0.5)
        for y, model in enumerate(models):
            e = sp["models"][model]
            ax.plot(
                e["rank_ci"], [y + offset] * 2, color=f"C{k}", alpha=0.45, linewidth=3, solid_capstyle="butt"
            )
        ax.plot([sp["models"][m]["rank"] for m in models], [y + offset for y in range(len(models))],
                "o", color=f"C{k}", markersize=4, label=sp["name"])  # fmt: skip
    for j, (name, ref) in enumerate(record["references"].items()):
        ranks = ref.get("ranks", {})
        ys = [y for y, m in enumerate(models) if m in ranks]
        ax.plot([ranks[models[y]] for y in ys], ys, "x" if j == 0 else "+", color="black" if j == 0 else "0.4",
                markersize=7, label=name)  # fmt: skip
    ax.set_yticks(range(len(models)), models, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("rank (1 = best); bars: within-split world-bootstrap interval")
    ax.set_xlim(0.5, len(models) + 0.5)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Rank of each model across regenerated splits", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(record: dict, out: Path) -> str:
    """Write ``stability.json``, ``stability.md`` and ``rank_spread.png`` into ``out``; return the markdown."""
    text = markdown(record)
    try:
        (out / "stability.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        (out / "stability.md").write_text(text, encoding="utf-8")
        plot(record, out / "rank_spread.png")
    except OSError as exc:
        raise UsageError(f"cannot write to {out}: {exc.strerror}") from None
    return text
