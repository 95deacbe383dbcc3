"""The site in a real headless chromium, opened from disk (``file://``): no console errors, the
failing predicate on a failing trial's page, working filters, no script from a transcript, and
a screenshot written by the run."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from apiflow.viewer.html import token

from .conftest import PUBLISHED, build, records_of

pytestmark = pytest.mark.slow  # one chromium for the module: ~10-20 s in all on a loaded 2-core machine

PAYLOAD = (
    "<script>window.__xss=1</script><img src=x onerror=\"window.__xss=2\"><svg onload='window.__xss=3'></svg>"
    '"\'><iframe srcdoc="<script>parent.__xss=4</script>"></iframe></pre></details></td></table>'
)


def _open(browser, path: Path) -> list[dict]:
    """Load a page from disk and return its SEVERE console entries."""
    browser.get(path.resolve().as_uri())
    browser.find_element("css selector", "h1")  # the page rendered
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def _visible(browser, selector: str) -> int:
    return sum(1 for e in browser.find_elements("css selector", selector) if e.is_displayed())


def _choose(browser, name: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("css selector", f'select[name="{name}"]')).select_by_value(value)


def test_pages_load_without_console_errors(browser, published_site, grid_site):
    for site in (published_site, grid_site):
        model_dir = sorted((site / "m").iterdir())[0]
        pages = [
            site / "index.html",
            model_dir / "index.html",
            sorted((model_dir / "task").iterdir())[0],
            sorted((model_dir / "t").iterdir())[0],
            sorted((site / "prompts").iterdir())[0],
        ]
        for page in pages:
            assert _open(browser, page) == [], page
    assert browser.execute_script("return document.scripts.length") == 1


def test_failing_trial_page_shows_its_failing_predicate(browser, published_site, tmp_path):
    page = published_site / "m" / token("claude-opus-4-8") / "t" / f"{token('v56-w01-chain-1to05-t1')}.html"
    assert _open(browser, page) == []
    failing = browser.find_elements("css selector", "table.predicates tr.pred.fail")
    assert len(failing) == 1
    text = failing[0].text
    assert "answer.final_status == 'committed'" in text and "'checking' != expected 'committed'" in text
    assert (
        "first failure: answer field 'final_status'"
        in browser.find_element("css selector", "table.facts").text
    )
    shot = tmp_path / "viewer-trial.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    print(f"screenshot of a failing trial's page: {shot}")


def test_expand_all_opens_every_tool_call_and_result(browser, published_site):
    page = published_site / "m" / token("gpt-5.5") / "t" / f"{token('v56-w01-sub02-t1')}.html"
    assert _open(browser, page) == []
    blocks = "document.querySelectorAll('.conversation details')"
    total = browser.execute_script(f"return {blocks}.length")
    assert total > 3 and browser.execute_script(f"return [...{blocks}].filter(d => d.open).length") == 0
    button = browser.find_element("css selector", "button[data-toggle-all]")
    button.click()
    assert browser.execute_script(f"return [...{blocks}].filter(d => d.open).length") == total
    button.click()
    assert browser.execute_script(f"return [...{blocks}].filter(d => d.open).length") == 0


def test_model_page_filters(browser, own_trials, grid_site):
    records = [r for r in records_of(own_trials) if r.model == "apiflow-sim-strong"]
    by_task = defaultdict(list)
    for r in records:
        by_task[r.task_id].append(r)
    assert _open(browser, grid_site / "m" / token("apiflow-sim-strong") / "index.html") == []
    assert _visible(browser, "#tasks tr.item") == len(by_task)
    assert _visible(browser, "#tasks .chip") == len(records)

    _choose(browser, "status", "fail")
    failing_tasks = [t for t, rs in by_task.items() if any(not r.passed for r in rs)]
    assert 0 < len(failing_tasks) < len(by_task), "the fixture needs a mix of passing and failing tasks"
    assert _visible(browser, "#tasks tr.item") == len(failing_tasks)
    assert _visible(browser, "#tasks .chip") == sum(not r.passed for r in records)
    shown = browser.find_element("css selector", "p.count").text
    assert (
        shown
        == f"showing {len(failing_tasks)} of {len(by_task)} rows ({sum(not r.passed for r in records)} trials)"
    )

    world = sorted({t.split("-")[1] for t in failing_tasks})[0]
    _choose(browser, "world", world)
    expected = [t for t in failing_tasks if t.split("-")[1] == world]
    assert _visible(browser, "#tasks tr.item") == len(expected)

    _choose(browser, "status", "")
    _choose(browser, "world", "")
    _choose(browser, "failure", "delivery_only")
    delivery = [r for r in records if r.verdict == "I" and _groups(r) == (True, False) and not _abstained(r)]
    assert _visible(browser, "#tasks .chip") == len(delivery)

    _choose(browser, "failure", "")
    _choose(browser, "kind", "chain")
    assert _visible(browser, "#tasks tr.item") == sum("-chain-" in t for t in by_task)


def _groups(record) -> tuple[bool, bool]:
    sub = record.verifier["metadata"]["sub_predicates"]
    return sub["g1_passed"], sub["g2_passed"]


def _abstained(record) -> bool:
    return record.failure_reason.startswith("agent abstained")


def test_task_page_filter(browser, own_trials, grid_site):
    records = [r for r in records_of(own_trials) if r.model == "apiflow-sim-strong"]
    by_task = defaultdict(list)
    for r in records:
        by_task[r.task_id].append(r)
    task, trials = next((t, rs) for t, rs in sorted(by_task.items()) if len({r.passed for r in rs}) == 2)
    page = grid_site / "m" / token("apiflow-sim-strong") / "task" / f"{token(task)}.html"
    assert _open(browser, page) == []
    assert _visible(browser, "#trials tr.item") == len(trials)
    _choose(browser, "status", "pass")
    assert _visible(browser, "#trials tr.item") == sum(bool(r.passed) for r in trials)


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
    """A published trial whose model output, tool results, grader text and ids carry markup."""
    trial = json.loads((PUBLISHED / "gpt-oss-120b" / "v56-w06-sub06-t3.json").read_bytes())
    trial["model"] = "evil" + PAYLOAD
    trial["failure_reason"] = trial["verifier"]["explanation"] = PAYLOAD
    for message in trial["messages"]:
        if message["role"] == "user":
            message["content"] = PAYLOAD + message["content"]
        if message["role"] == "tool":
            message["content"] = PAYLOAD
        for call in message.get("tool_calls") or ():
            call["name"] = PAYLOAD
            call["arguments"] = {"request": PAYLOAD}
    trial["messages"][-1]["content"] = [
        {"type": "text", "text": PAYLOAD},
        {"type": "reasoning", "reasoning": PAYLOAD},
    ]
    predicate = trial["verifier"]["metadata"]["predicates"][0]
    predicate["label"] = predicate["detail"]["got"] = PAYLOAD
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "trial.json").write_text(json.dumps(trial))
    return build(folder, folder.parent / "hostile-site", workers=1)


def test_markup_in_a_transcript_never_runs(browser, hostile_site):
    model_dir = next((hostile_site / "m").iterdir())
    pages = [
        hostile_site / "index.html",
        model_dir / "index.html",
        next((model_dir / "task").iterdir()),
        next((model_dir / "t").iterdir()),
    ]
    for page in pages:
        assert _open(browser, page) == [], page  # an inline script blocked by the CSP would log SEVERE
        assert browser.execute_script("return window.__xss") is None
        assert browser.execute_script("return document.querySelectorAll('img, svg, iframe').length") == 0
        scripts = browser.execute_script("return [...document.scripts].map(s => s.src)")
        assert len(scripts) == 1 and scripts[0].endswith("/viewer.js")
    button = browser.find_element("css selector", "button[data-toggle-all]")
    button.click()  # open every tool call and result: their text is shown, as text
    assert browser.execute_script("return window.__xss") is None
    body = browser.find_element("css selector", "body").text
    assert body.count("<script>window.__xss=1</script>") >= 6


def test_world_and_length_filters_on_published_trials(browser, published_site):
    assert _open(browser, published_site / "m" / token("claude-opus-4-8") / "index.html") == []
    assert _visible(browser, "#tasks tr.item") == 4  # w01 sub01, chain-1to02, chain-1to05; w05 chain-1to14
    _choose(browser, "world", "w05")
    assert [
        e.text
        for e in browser.find_elements("css selector", "#tasks tr.item td:first-child")
        if e.is_displayed()
    ] == ["v56-w05-chain-1to14"]
    _choose(browser, "world", "w01")
    _choose(browser, "length", "5")
    assert _visible(browser, "#tasks tr.item") == 1
    _choose(browser, "status", "pass")
    assert _visible(browser, "#tasks tr.item") == 0  # its one trial failed
    assert browser.find_element("css selector", "p.count").text == "showing 0 of 4 rows (0 trials)"
