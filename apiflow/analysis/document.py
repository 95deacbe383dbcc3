"""The report's content as plain sections (text + tables), rendered to Markdown, HTML and terminal."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Table:
    """A table: column headers and rows of display strings."""

    header: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    """A titled block of paragraphs, tables and figure references."""

    title: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # figure names (see figures.FIGURES)


def pct(x: float | None, digits: int = 1) -> str:
    """A rate as a percentage string ("—" when missing)."""
    return "—" if x is None else f"{100 * x:.{digits}f}%"


ONE_WORLD = "n/a (1 world)"
"""Shown instead of an interval resampled from a single world: every resample is that world, so the
range has zero width whatever the data, and a reader would take it for certainty."""


def band_text(band: list | None, worlds: int | None, fmt: str = "{:.1f}", scale: float = 1.0) -> str:
    """``[lo, hi]`` of a bootstrap interval, ``ONE_WORLD`` when it came from one world, "" when none."""
    if not band or band[0] is None:
        return ""
    if worlds is not None and worlds <= 1:
        return ONE_WORLD
    return f"[{fmt.format(scale * band[0])}, {fmt.format(scale * band[1])}]"


def report_worlds(s: dict) -> int:
    """The number of worlds the report's bootstrap resamples."""
    return len(s["meta"]["worlds"])


def pct_ci(entry: dict, key: str = "rate", ci_key: str = "ci90", worlds: int | None = None) -> str:
    """``74.4% [53.6, 93.5]``, or ``74.4% n/a (1 world)``.

    ``worlds``: how many worlds the interval was resampled from, when ``entry`` does not say
    (a slice's entry carries its own ``worlds``; a per-model entry takes its slice's).
    """
    if entry.get(key) is None:
        return "—"
    band = band_text(entry.get(ci_key), entry.get("worlds", worlds), scale=100)
    return f"{pct(entry[key])} {band}" if band else pct(entry[key])


BOTH_RATES = ("pass (scored)", "pass (unscored = fail)")
"""The leaderboard's two convention-free rates of a model, over all its trials: passes / scored trials,
and passes / every trial (an unscored trial as a failure), beside its unscored count, so that a model
whose failures end as unscored trials cannot look better than it is, whatever ``--count-unscored`` says."""


def _model_rates(entry: dict) -> dict[str, dict]:
    return {m["model"]: m for m in entry["per_model"]}


def leaderboard_table(s: dict) -> Table:
    """One row per model, ordered by overall pass rate."""
    k = s["headline"]["length"]
    epochs = s["reach"]["epochs"]
    slices = {
        "all": _model_rates(s["pass_rates"]["all"]),
        "solo": _model_rates(s["pass_rates"]["solo"]),
        "chains": _model_rates(s["pass_rates"]["chains"]["inclusive"]),
        "chains_clean": _model_rates(s["pass_rates"]["chains"]["clean"]),
        "head": _model_rates(s["headline"]["inclusive"]) if k else {},
        "head_clean": _model_rates(s["headline"]["clean"]) if k else {},
    }
    cost = {r["model"]: r for r in s["cost"]["models"]}
    outcomes = s.get("outcomes", {}).get("models", {})
    order = sorted(slices["all"], key=lambda m: -(slices["all"][m]["rate"] or 0))
    header = ["#", "model", "pass rate [90% CI]", "solo", "chains", "chains clean"]
    if k:
        header += [f"L{k}", f"L{k} clean"]
    header += [f"best-of-{epochs}", f"all-{epochs}-of-{epochs}", "USD/trial", *BOTH_RATES, "unscored"]
    rows = []
    for rank, model in enumerate(order, 1):
        row = [str(rank), model, pct_ci(slices["all"][model], worlds=s["pass_rates"]["all"]["worlds"])]
        row += [pct(slices[name].get(model, {}).get("rate")) for name in ("solo", "chains", "chains_clean")]
        if k:
            row += [pct(slices[name].get(model, {}).get("rate")) for name in ("head", "head_clean")]
        reach = s["reach"]["models"].get(model, {})
        row += [pct(reach.get("best_of", {}).get("value")), pct(reach.get("all_of", {}).get("value"))]
        usd = cost.get(model, {}).get("mean_usd_per_trial")
        entry = outcomes.get(model) or {}
        row += [
            "—" if usd is None else f"{usd:.4f}",
            pct(entry.get("pass_rate_scored")),
            pct(entry.get("pass_rate_unscored_as_fail")),
            unscored_cell(outcomes.get(model), slices["all"][model]["unscored"]),
        ]
        rows.append(row)
    return Table(header, rows)



FLAG = "⚑"
"""Marks a model with more than the flag share of its trials unscored (leaderboard and outcomes table)."""


def unscored_cell(entry: dict | None, fallback: int) -> str:
    """``3 (2.5%) ⚑``: a model's unscored trials, their share of its trials, the flag."""
    if entry is None:
        return str(fallback)
    if not entry["unscored"]:
        return "0"
    flag = f" {FLAG}" if entry["flagged"] else ""
    return f"{entry['unscored']} ({pct(entry['unscored_share'])}){flag}"


def flag_paragraph(s: dict) -> str:
    """One sentence naming the flagged models (or saying there are none)."""
    outcomes = s.get("outcomes")
    if not outcomes:
        return ""
    limit = pct(outcomes["flag_share"], 0)
    flagged = outcomes["flagged"]
    if not flagged:
        return f"No model has more than {limit} of its trials unscored."
    named = ", ".join(
        f"{m} ({outcomes['models'][m]['unscored']} of {outcomes['models'][m]['trials']}, "
        f"{pct(outcomes['models'][m]['unscored_share'])})"
        for m in flagged
    )
    return (
        f"{FLAG} More than {limit} of its trials unscored: {named}. Unscored trials are harness/provider "
        "outcomes or trials without a verdict; they never pass and are out of the denominators unless "
        "--count-unscored, so a flagged model's rates rest on fewer trials than it ran and may be biased "
        "if those trials did not fail at random (see Harness and provider outcomes)."
    )


def headline_paragraphs(s: dict) -> list[str]:
    """The key figures in sentences."""
    meta, rates, screen = s["meta"], s["pass_rates"], s["screen"]
    un = meta["unscored"]
    out = [
        f"{meta['trials']:,} trials, {len(meta['models'])} models, {meta['tasks']} tasks "
        f"({meta['solo_tasks']} solo, {meta['chain_tasks']} chains), {len(meta['worlds'])} worlds. "
        f"Denominators: {'all trials (unscored count as failures)' if meta['convention'] == 'count_unscored' else 'scored trials only'}; "
        f"unscored trials: {un['total']} ({un['no_verdict']} without verdict, {un['harness']} harness/provider outcomes), never passes.",
        f"Solo pass rate {pct_ci(rates['solo'])}; chains {pct_ci(rates['chains']['inclusive'])} inclusive, "
        f"{pct_ci(rates['chains']['clean'])} clean. Intervals: 90% world cluster bootstrap, "
        f"B = {meta['bootstrap']['resamples']:,}, seed {meta['bootstrap']['seed']}, {len(meta['worlds'])} worlds.",
    ]
    flag = flag_paragraph(s)
    if flag:
        out.insert(1, flag)
    if len(meta["worlds"]) < 5:
        out.append(
            f"Only {len(meta['worlds'])} world(s): a world cluster bootstrap cannot measure world-to-world "
            "variation, so its intervals are too narrow (with one world they would have zero width, and are shown "
            f"as {ONE_WORLD}). Add worlds before reading them."
        )
    if screen["chain_trials"]:
        out.append(
            f"Cell screen: {screen['n_flagged']} chain cells with no pass by any model, covering "
            f"{screen['flagged_trials']:,} of {screen['chain_trials']:,} counted chain trials ({pct(screen['flagged_share'])}); "
            f"{len(screen['near_zero_cells'])} near-zero cells (1–3 passes) kept."
        )
    head = s["headline"]
    if head["length"]:
        clean = (
            f"{pct_ci(head['clean'])} clean over {head['clean']['worlds']} worlds"
            if head["clean"]["trials"]
            else f"no clean trials (every length-{head['length']} cell is flagged)"
        )
        out.append(
            f"Headline slice, length {head['length']}: {pct_ci(head['inclusive'])} inclusive over "
            f"{head['inclusive']['worlds']} worlds, {clean}."
        )
        null = s["null_model"]["headline_clean"]
        if null["trials"]:
            gap_band = band_text(null["gap_points_ci90"], report_worlds(s), fmt="{:+.1f}")
            gap_text = f", 90% CI {gap_band}" if gap_band else ""
            out.append(
                f"Independent-error null on the clean length-{head['length']} slice: observed {pct(null['observed'])} vs "
                f"predicted {pct(null['predicted'])} (gap {null['gap_points']:+.1f} points{gap_text})."
            )
        fail = s["failures"]["headline_clean"]
        out.append(
            f"Failures on that slice: {fail['failures']} — {fail['delivery_only']} delivery-only (G1 ✓, G2 ✗), "
            f"{fail['state_only']} state-only, {fail['both']} both, {fail['abstained']} abstained."
        )
    return out
