"""Assemble the report's sections from ``summary.json``."""

from __future__ import annotations

from apiflow.analysis.document import (
    FLAG,
    Section,
    Table,
    band_text,
    flag_paragraph,
    headline_paragraphs,
    leaderboard_table,
    pct,
    pct_ci,
    report_worlds,
)
from apiflow.analysis.served import served_flag_line, served_section


def _f(x: float | None, fmt: str = "{:.1f}") -> str:
    return "—" if x is None else fmt.format(x)


def _band(band: list | None, worlds: int, fmt: str = "{:.1f}") -> str:
    text = band_text(band, worlds, fmt)
    return f" {text}" if text else ""


def reach_section(s: dict) -> Section:
    """pass@k / pass^k per model and their spreads."""
    reach = s["reach"]
    ks = [k for k in range(1, 6) if f"pass@{k}" in next(iter(reach["models"].values()), {})]
    header = ["model"] + [f"pass@{k}" for k in ks] + [f"pass^{k}" for k in ks]
    rows = []
    for model, entry in sorted(reach["models"].items(), key=lambda kv: -kv[1]["best_of"]["value"]):
        rows.append(
            [model]
            + [pct(entry[f"pass@{k}"]["value"]) for k in ks]
            + [pct(entry[f"pass^{k}"]["value"]) for k in ks]
        )
    spread = reach["spread"]
    e = reach["epochs"]
    if not spread:
        return Section("Reach vs reliability", ["No counted trials."])
    text = [
        f"Best-of-{e} (reach) spans {pct(spread['best_of']['min'])}–{pct(spread['best_of']['max'])} across models; "
        f"all-{e}-of-{e} (reliability) spans {pct(spread['all_of']['min'])}–{pct(spread['all_of']['max'])}. "
        "pass@k and pass^k are the unbiased estimators (Chen et al. 2021; Yao et al. 2024); a task with fewer "
        f"than k counted trials has pass@k = 1[any pass] and pass^k = 0.",
        "Spread (max − min across models, points): "
        + ", ".join(f"{name} {v['points']:.1f}" for name, v in spread.items()),
    ]
    for variant in ("inclusive", "clean"):
        chains = s["reach_chains"][variant]["spread"]
        if chains:
            text.append(
                f"Chain tasks only ({variant}): best-of-{e} {pct(chains['best_of']['min'])}–{pct(chains['best_of']['max'])}, "
                f"all-{e}-of-{e} {pct(chains['all_of']['min'])}–{pct(chains['all_of']['max'])}."
            )
    return Section("Reach vs reliability", text, [Table(header, rows)], ["reach_reliability"])


def separation_section(s: dict) -> Section:
    """Model spread on solo tasks and on the headline slice."""
    rows = []
    worlds = report_worlds(s)
    names = {
        "solo": "solo tasks",
        "headline_inclusive": "headline, inclusive",
        "headline_clean": "headline, clean",
    }
    for key, label in names.items():
        v = s["separation"][key]
        rows.append(
            [
                label,
                _f(v["points"]) + _band(v.get("points_ci90"), worlds),
                _f(v["log_odds"], "{:.2f}") + _band(v.get("log_odds_ci90"), worlds, fmt="{:.2f}"),
                str(v.get("max_model")),
                str(v.get("min_model")),
            ]
        )
    return Section(
        "Model separation",
        [
            "Spread of per-model pass rates (max − min), in points and on the log-odds scale, with 90% world-bootstrap intervals."
        ],
        [Table(["slice", "points", "log-odds", "best", "worst"], rows)],
    )


def null_section(s: dict) -> Section:
    """Observed vs independent-error prediction by chain length."""
    rows = []
    worlds = report_worlds(s)
    for k, entry in s["null_model"]["by_length"].items():
        row = [k]
        for variant in ("inclusive", "clean"):
            v = entry[variant]
            row += [
                pct(v["observed"]),
                pct(v["predicted"]),
                _f(v["gap_points"], "{:+.1f}") + _band(v.get("gap_points_ci90"), worlds, fmt="{:+.1f}"),
            ]
        rows.append(row)
    header = [
        "K",
        "observed",
        "predicted",
        "gap (pts)",
        "observed clean",
        "predicted clean",
        "gap clean (pts)",
    ]
    text = [
        "Prediction for a chain trial of model m in world w with length K: the product of m's solo pass rates "
        "on steps 1..K of w; a slice's prediction is the mean over its chain trials."
    ]
    return Section("Independent-error null model", text, [Table(header, rows)], ["pass_vs_length"])


def failures_section(s: dict) -> Section:
    """Failure composition per slice."""
    names = {
        "all": "all", "solo": "solo", "chains_inclusive": "chains", "chains_clean": "chains clean",
        "headline_inclusive": "headline", "headline_clean": "headline clean",
    }  # fmt: skip
    rows = [
        [label]
        + [
            str(s["failures"][key][c])
            for c in ("failures", "state_only", "delivery_only", "both", "abstained", "other")
        ]
        for key, label in names.items()
    ]
    header = [
        "slice",
        "failures",
        "state-only (G1 ✗ G2 ✓)",
        "delivery-only (G1 ✓ G2 ✗)",
        "both",
        "abstained",
        "other",
    ]
    return Section("Failure composition (failed scored trials)", [], [Table(header, rows)])


def screen_section(s: dict) -> Section:
    """Flagged and near-zero cells."""
    sc = s["screen"]
    text = [
        "Flagged (no pass by any model; removed from clean statistics): "
        + (", ".join(sc["flagged_cells"]) or "none")
        + ".",
        "Near-zero (1–3 passes; kept, unadjudicated): "
        + (", ".join(f"{c['task_id']} ({c['passes']})" for c in sc["near_zero_cells"]) or "none")
        + ".",
    ]
    return Section("Cell screen", text)


def cost_section(s: dict) -> Section:
    """Mean cost per model and the frontier."""
    c = s["cost"]
    rows = [
        [
            r["model"],
            _f(r["mean_usd_per_trial"], "{:.4f}"),
            pct(r["pass_rate"]),
            _f(r["usd_per_pass"], "{:.4f}"),
            "yes" if r["model"] in c["pareto_frontier"] else "",
        ]
        for r in sorted(
            c["models"], key=lambda r: (r["mean_usd_per_trial"] is None, r["mean_usd_per_trial"] or 0)
        )
    ]
    table = c["price_table"]
    text = [
        f"Cost source: {c['source']}"
        + (f" (price table {table['version']}, sha256 {table['sha256'][:12]}…)" if table else "")
        + "."
    ]
    if c["unpriced_models"]:
        text.append("Unpriced models: " + ", ".join(c["unpriced_models"]) + ".")
    return Section(
        "Cost",
        text,
        [Table(["model", "USD / trial", "pass rate", "USD / pass", "Pareto"], rows)],
        ["cost_pareto"],
    )


def variation_section(s: dict) -> Section:
    """World vs model variance."""
    rows = []
    for key, label in (
        ("headline_inclusive", "headline, inclusive"),
        ("headline_clean", "headline, clean"),
        ("all_trials", "all tasks"),
    ):
        v = s["variation"][key]
        rows.append(
            [
                label,
                str(v["worlds"]),
                _f(v["world_var"]),
                _f(v["model_var"]),
                pct(v["world_share"]),
                pct(v["model_share"]),
                pct(v["residual_share"]),
            ]
        )
    header = [
        "slice",
        "worlds",
        "var of world means (pts²)",
        "var of model means (pts²)",
        "world share",
        "model share",
        "residual share",
    ]
    return Section(
        "Variation: worlds vs models",
        ["Two-way decomposition of world × model cell pass rates (worlds with every model)."],
        [Table(header, rows)],
        ["world_model_heatmap"],
    )


def _counted(entry: dict) -> str:
    return f"{entry['count']} ({pct(entry['share'])})" if entry["count"] else "0"


def outcomes_section(s: dict) -> Section:
    """Harness/provider outcomes per model: by termination and by kind, share of the model's trials."""
    o = s["outcomes"]
    rows = []
    for model, e in sorted(o["models"].items(), key=lambda kv: (-kv[1]["unscored_share"], kv[0])):
        kinds = ", ".join(f"{kind} {_counted(c)}" for kind, c in e["by_kind"].items()) or "—"
        rows.append(
            [model, str(e["trials"]), _counted({"count": e["unscored"], "share": e["unscored_share"]})]
            + [_counted(e["by_termination"][t]) for t in ("provider_error", "harness_error", "no_verdict")]
            + [kinds, FLAG if e["flagged"] else ""]
        )
    header = [
        "model",
        "trials",
        "unscored",
        "provider_error",
        "harness_error",
        "no verdict",
        "by kind",
        "flag",
    ]
    convention = (
        "kept in every denominator as failures (--count-unscored)"
        if o["convention"] == "count_unscored"
        else "left out of every denominator (pass --count-unscored to count them as failures)"
    )
    text = [
        "Trials that say nothing about the model: the provider gave up after the retries (provider_error), the "
        "harness failed (harness_error), or a published trial has no verdict. They never pass; here they are "
        f"{convention}. Shares are of each model's trials; kinds are the fault classes recorded on the trials. "
        "The leaderboard gives every model's pass rate both ways, on its scored trials and with its unscored "
        "trials as failures.",
        flag_paragraph(s),
    ]
    return Section("Harness and provider outcomes", text, [Table(header, rows)])


def build_sections(s: dict) -> list[Section]:
    """Every section of the report, in order."""
    k = s["headline"]["length"]
    paragraphs = headline_paragraphs(s)
    served_flag = served_flag_line(s)
    if served_flag:
        paragraphs.insert(1, served_flag)
    board = Section("Leaderboard", paragraphs, [leaderboard_table(s)])
    by_length = Table(
        ["K", "trials", "inclusive [90% CI]", "clean trials", "clean [90% CI]"],
        [
            [
                key,
                str(v["inclusive"]["trials"]),
                pct_ci(v["inclusive"]),
                str(v["clean"]["trials"]),
                pct_ci(v["clean"]),
            ]
            for key, v in s["pass_rates"]["by_length"].items()
        ],
    )
    sections = [board, outcomes_section(s)] if "outcomes" in s else [board]
    served = served_section(s)
    if served is not None:
        sections.append(served)
    if k:
        sections.append(Section("Pass rate by chain length", [], [by_length]))
        sections += [null_section(s), screen_section(s)]
    sections += [
        reach_section(s),
        separation_section(s),
        failures_section(s),
        cost_section(s),
        variation_section(s),
    ]
    return sections
