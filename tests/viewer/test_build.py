"""``apiflow view``: what the site holds, read back from its files (the browser tests load it)."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from apiflow.analysis.cost import trial_costs
from apiflow.analysis.table import load_table
from apiflow.analysis.trials import trials_from_table
from apiflow.cli import main
from apiflow.errors import UsageError
from apiflow.results.prices import load_price_table
from apiflow.viewer.html import token, usd

from .conftest import LOST_MODEL, PRICES, PUBLISHED, build, records_of


def _pages(site: Path, pattern: str) -> list[Path]:
    return sorted(site.glob(pattern))


def _trial_page(site: Path, model: str, key: str) -> str:
    return (site / "m" / token(model) / "t" / f"{token(key)}.html").read_text()


def test_published_site_has_one_page_per_model_task_and_trial(published_site):
    trials = sorted(p for p in PUBLISHED.rglob("*.json") if not p.name.startswith("_"))
    models = {p.parent.name for p in trials}
    assert len(_pages(published_site, "m/*/t/*.html")) == len(trials) == 42
    assert len(_pages(published_site, "m/*/task/*.html")) == 42  # task ids are unique in the fixture set
    assert len(_pages(published_site, "m/*/index.html")) == len(models) == 13
    assert (published_site / "index.html").is_file()
    assert (published_site / "viewer.js").is_file() and (published_site / "viewer.css").is_file()
    for path in trials:
        record = json.loads(path.read_bytes())
        page = _trial_page(published_site, record["model"], f"{record['task_id']}-t{record['trial']}")
        assert html.escape(record["failure_reason"], quote=True) in page


def test_failing_trial_page_names_its_failing_predicate(published_site):
    page = _trial_page(published_site, "claude-opus-4-8", "v56-w01-chain-1to05-t1")
    failing = re.findall(r'<tr class="pred fail">(.*?)</tr>', page, flags=re.S)
    assert len(failing) == 1
    assert html.escape("answer.final_status == 'committed'") in failing[0]
    assert html.escape("'checking' != expected 'committed'") in failing[0]
    assert page.count('<tr class="pred pass">') == 3


def test_segment_diagnostics_of_a_long_chain(published_site):
    page = _trial_page(published_site, "claude-haiku-4-5-20251001", "v56-w08-chain-1to14-t1")
    record = json.loads(
        (PUBLISHED / "claude-haiku-4-5-20251001" / "v56-w08-chain-1to14-t1.json").read_bytes()
    )
    diagnostics = record["verifier"]["metadata"]["sub_predicates"]["segment_diagnostics"]
    assert f"failure stage <b>{diagnostics['failure_stage']}</b>" in page
    for segment in diagnostics["per_segment"]:
        assert f"<td>{segment}</td>" in page


def test_costs_are_the_analysis_costs(published_site):
    """Trial pages show ``analysis.cost.trial_costs`` (published: tokens x the pinned table)."""
    table = load_table([str(PUBLISHED)])
    trials = trials_from_table(table)
    costs = trial_costs(trials, load_price_table(PRICES), reprice=False).usd
    assert not np.isnan(costs).all()
    for i in range(trials.n):
        model, task, number = (
            table["model"][i].as_py(),
            table["task_id"][i].as_py(),
            table["trial"][i].as_py(),
        )
        page = _trial_page(published_site, model, f"{task}-t{number}")
        shown = None if np.isnan(costs[i]) else float(costs[i])
        assert f"<th>cost</th><td>{html.escape(usd(shown))}</td>" in page


def test_grid_store_shows_the_stored_trial_over_its_failed_attempt(own_grid, own_trials, grid_site):
    records = records_of(own_trials)
    pages = _pages(grid_site, "m/*/t/*.html")
    assert len(pages) == len(records) + 1  # every stored trial, plus the never-finished one
    retried = records[0]
    page = _trial_page(grid_site, retried.model, retried.apiflow.trial_id)
    assert "RateLimitError" not in page and f"badge s-{'pass' if retried.passed else 'fail'}" in page
    lost = _trial_page(grid_site, LOST_MODEL, "never-finished")
    assert "badge s-harness" in lost and "RateLimitError: 429 from the stand-in" in lost


def test_model_page_counts_match_the_records(own_trials, grid_site):
    records = records_of(own_trials)
    for model in {r.model for r in records}:
        page = (grid_site / "m" / token(model) / "index.html").read_text()
        mine = [r for r in records if r.model == model]
        statuses = Counter(re.findall(r'class="chip s-(\w+)"', page))
        expected = Counter("pass" if r.passed else "fail" for r in mine)
        if model == LOST_MODEL:
            expected["harness"] += 1
        assert statuses == expected
        assert page.count('<tr class="item"') == len({r.task_id for r in mine})


def test_rebuild_is_byte_identical_and_replaces_an_earlier_site(tmp_path):
    first = build(PUBLISHED, tmp_path / "a", workers=1)
    second = build(PUBLISHED, tmp_path / "b", workers=1)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)
    stale = first / "m" / "stale.html"
    stale.write_text("old")
    build(PUBLISHED / "kimi-k3", first, workers=1)
    assert not stale.exists() and len(_pages(first, "m/*/index.html")) == 1


def test_refuses_a_folder_that_is_not_a_site(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not an apiflow viewer site"):
        build(PUBLISHED, tmp_path, workers=1)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    assert main(["view", str(tmp_path / "missing"), "--out", str(tmp_path / "site")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.json").write_text(json.dumps({"schema_version": "2.0"}))
    assert main(["view", str(bad), "--out", str(tmp_path / "site2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x.json: not a schema-1.0 trial" in err
    (bad / "x.json").write_text(json.dumps({"schema_version": "1.0", "model": "m"}))
    assert main(["view", str(bad), "--out", str(tmp_path / "site3")]) == 2
    assert "x.json: not a usable schema-1.0 trial" in capsys.readouterr().err


def test_cli_reports_what_it_wrote(tmp_path, capsys):
    assert main(["view", str(PUBLISHED / "gpt-5.5"), "--out", str(tmp_path / "site"), "--workers", "1"]) == 0
    err = capsys.readouterr().err
    assert "(4 trials, 1 models, 4 model x task)" in err and "index.html" in err


def test_the_same_trial_twice_is_refused(tmp_path):
    source = PUBLISHED / "kimi-k3" / "v56-w02-sub13-t3.json"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / source.name).write_bytes(source.read_bytes())
    with pytest.raises(UsageError, match=r"hold the same trial \(kimi-k3, v56-w02-sub13-t3\)"):
        build(tmp_path, tmp_path.parent / f"{tmp_path.name}-site", workers=1)
