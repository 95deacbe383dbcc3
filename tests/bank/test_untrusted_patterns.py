"""Bank-supplied patterns run on RE2: refused at load when RE2 cannot compile them, linear always.

docs/design/061-untrusted-banks.md. The two ReDoS tests carry the time bound the issue names (< 1 s).
"""

from __future__ import annotations

import glob
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from grading.helpers import Script
from untrusted_kit import SUB, WORLD, copy_sample, read, write

from apiflow.bank import load_bank
from apiflow.errors import UsageError
from apiflow.grading.diagnostics import checkpoint
from apiflow.grading.predicates import new_response, url_regex
from apiflow.grading.rules import PUBLISHED
from apiflow.grading.spec import CheckpointSpec, NewResponseSpec
from apiflow.world import HttpRequest, dispatch
from apiflow.world.patterns import MAX_PATTERN_LENGTH, PatternError, compile_pattern, grading_pattern

ROOT = Path(__file__).resolve().parents[2]
EVIL = "(a+)+$"
# Bounds are on CPU time (process_time): the suite shares two cores with other work, and wall
# time would measure the neighbours. Under backtracking each of these takes hours, not seconds.
VICTIM = "a" * 40 + "!"
PATTERN_KEYS = ("url_pattern", "from_response_url_pattern", "used_in_request_url_pattern", "matches")


def _walk(value: Any, found: set[str], urls: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in PATTERN_KEYS and isinstance(item, str):
                found.add(item)
            elif key in ("url", "path") and isinstance(item, str):
                urls.add(item)
            _walk(item, found, urls)
    elif isinstance(value, list):
        for item in value:
            _walk(item, found, urls)


def _corpus() -> tuple[set[str], set[str]]:
    patterns: set[str] = set()
    urls: set[str] = set()
    for file in glob.glob(str(ROOT / "bank/*/*/*.yaml")):
        _walk(yaml.load(Path(file).read_text(), Loader=yaml.CSafeLoader), patterns, urls)
    for file in glob.glob(str(ROOT / "tests/data/transcripts/*/*.json")):
        _walk(json.loads(Path(file).read_text()), patterns, urls)
    return patterns, urls


def test_every_shipped_pattern_compiles_under_re2_with_identical_results() -> None:
    patterns, urls = _corpus()
    assert len(patterns) > 700 and len(urls) > 400  # bank/sample, bank/v1 and the 42 transcripts
    subjects = sorted(urls) + ["", "/", "\n", "v3/oauth/token\n", "é/v3/x", "/V3/FIELDS"]
    checked = 0
    for pattern in sorted(patterns):
        safe = compile_pattern(pattern)  # raises if RE2 refused any of them
        python = re.compile(pattern)
        own = [pattern, pattern.replace("\\", ""), pattern.replace("\\", "") + "?x=1"]
        for subject in subjects + own:
            assert safe.search(subject) == (python.search(subject) is not None), (pattern, subject)
            checked += 1
    assert checked > 400_000


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("v3/oauth/token(?:\\?|$)", "/v3/oauth/token?x=1", True),
        ("v3/oauth/token(?:\\?|$)", "/v3/oauth/tokens", False),
        ("ab|cd", "xcd", True),  # a top-level alternation has no required prefix
        ("a(b|c)d", "acd", True),
        ("ab+c", "abbbc", True),
        ("ab*c", "ac", True),  # the starred character is not part of the required text
        ("x[|]y", "x|y", True),
        ("", "anything", True),
        ("(?i)V3/Fields", "/v3/fields", True),
        ("a.c", "x\ud800abc", True),  # a lone surrogate from a model does not raise
    ],
)
def test_prefilter_keeps_re_search_semantics(pattern: str, text: str, expected: bool) -> None:
    assert compile_pattern(pattern).search(text) is expected
    assert (re.search(pattern, text) is not None) is expected


@pytest.mark.parametrize(
    "pattern", ["(a)\\1", "(?=a)b", "(?<!x)y", "a" * (MAX_PATTERN_LENGTH + 1), "[a-z]{1000}" * 4, "\\pL{1000}" * 3]
)
def test_re2_refusals_are_one_line_errors_and_regrade_matches_them_literally(pattern: str) -> None:
    with pytest.raises(PatternError) as refused:
        compile_pattern(pattern)
    assert "\n" not in str(refused.value)
    literal = grading_pattern(pattern)
    assert literal.search(f"GET {pattern} x") and not literal.search("a")
    assert url_regex("v3/[") is grading_pattern("v3/[")  # Python-invalid: literal, as before
    assert url_regex("v3/[").search("/v3/[x") and not url_regex("v3/[").search("/v3/x")


def test_redos_pattern_on_the_grading_path_is_linear() -> None:
    s = Script()
    s.execute({"method": "GET", "url": VICTIM}, body={"ok": True})
    evidence = s.evidence()
    started = time.process_time()
    outcome = new_response(NewResponseSpec(url_pattern=EVIL), evidence, PUBLISHED, 1)
    checks = checkpoint(CheckpointSpec(id="c", url_pattern=EVIL), evidence)
    took = time.process_time() - started
    assert outcome.passed is False and checks
    assert re.search(EVIL, "a" * 20 + "!") is None  # the same answer Python gives, which takes
    assert took < 1.0  # ~2**40 steps on VICTIM under backtracking


def test_redos_pattern_on_the_bank_load_path_is_linear(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "bank")
    world = read(root, WORLD)
    token = next(r for r in world["routes"] if r["path"] == "/v3/auth/token")
    token["rules"].insert(0, {"id": "evil", "when": [{"at": "body.scope", "matches": EVIL}],
                              "respond": {"status": 418, "body": {"x": 1}}})
    task = read(root, SUB)
    task["checkpoints"] = [*task.get("checkpoints", []), {"id": "evil", "url_pattern": EVIL}]
    write(root, WORLD, world, rehash=False)
    write(root, SUB, task)
    bank = load_bank(root)
    started = time.process_time()
    request = HttpRequest("POST", token["path"], {"content-type": "application/json"}, {"scope": VICTIM})
    response = dispatch(bank.worlds["w01"], dict(bank.worlds["w01"].state), request, "127.0.0.1:1").response
    took = time.process_time() - started
    assert response.status != 418
    request = HttpRequest("POST", token["path"], {"content-type": "application/json"}, {"scope": "aaa"})
    assert dispatch(bank.worlds["w01"], dict(bank.worlds["w01"].state), request, "127.0.0.1:1").response.status == 418
    assert took < 1.0


@pytest.mark.parametrize(
    ("where", "edit", "named"),
    [
        ("world", lambda w, t: w["routes"][0]["rules"][0].setdefault("when", []).append(
            {"at": "body.scope", "matches": "(x)\\1"}), "matches"),
        ("task", lambda w, t: t["predicates"].append(
            {"kind": "new_response", "url_pattern": "(?=v3)v3"}), "url_pattern"),
        ("task", lambda w, t: t.update(constraints=[{"id": "c", "kind": "forbid", "url_pattern": "(?<=a)b"}]),
         "constraints.0.url_pattern"),
    ],
)
def test_a_pattern_re2_refuses_is_refused_at_load_naming_file_and_field(
    tmp_path: Path, where: str, edit: Any, named: str
) -> None:
    root = copy_sample(tmp_path / "bank")
    world, task = read(root, WORLD), read(root, SUB)
    edit(world, task)
    write(root, WORLD, world, rehash=False)
    write(root, SUB, task)
    with pytest.raises(UsageError) as refused:
        load_bank(root)
    message = str(refused.value)
    assert "\n" not in message and "RE2" in message and named in message
    assert (WORLD if where == "world" else SUB).split("/")[1] in message


@pytest.mark.parametrize(
    "path", ["/v3/{a}{b}{c}{d}{e}{f}{g}{h}x", "/v3/{a}-{b}", "/v3/{a}/{a}", "v3/no-slash", "/" + "a" * 600]
)
def test_route_paths_that_would_backtrack_or_are_ambiguous_are_refused(tmp_path: Path, path: str) -> None:
    root = copy_sample(tmp_path / "bank")
    world = read(root, WORLD)
    world["routes"].append({"method": "GET", "path": path, "rules": [{"respond": {"status": 200}}]})
    write(root, WORLD, world)
    started = time.process_time()
    with pytest.raises(UsageError) as refused:
        load_bank(root)
    assert "routes" in str(refused.value) and "\n" not in str(refused.value)
    assert time.process_time() - started < 1.0


def test_template_scanning_is_linear_on_unclosed_braces(tmp_path: Path) -> None:
    root = copy_sample(tmp_path / "bank")
    world = read(root, WORLD)
    world["routes"][0]["rules"][-1]["respond"]["body"] = {"a": "{{ " * 16_000, "b": "{{" + " " * 50_000 + "x"}
    write(root, WORLD, world)
    bank = load_bank(root)
    route = bank.worlds["w01"].routes[0]
    started = time.process_time()
    response = dispatch(bank.worlds["w01"], dict(bank.worlds["w01"].state),
                        HttpRequest(route.method, route.path.replace("{", "").replace("}", "")), "127.0.0.1:1")
    assert response is not None
    assert time.process_time() - started < 1.0  # Python's backtracking re took 30 s on the first string
