"""URL patterns: the ``<literal>(?:\\?|$)`` matcher answers exactly as RE2 (and Python's ``re``) do."""

from __future__ import annotations

import random
import re

import pytest

from apiflow.grading.routes import PathPattern, url_regex
from apiflow.world.patterns import grading_pattern

PATHS = [r"v3/oauth/token", r"v3/seatmaps/smp\-eebf\-016f/event\-audit", "/v1/ünï", "", "a?b"]
URLS = [
    "/v3/oauth/token",
    "/v3/oauth/token?x=1",
    "/v3/oauth/token/extra",
    "/v3/oauth/token\n",
    "/v3/oauth/token\n\n",
    "/v3/oauth/tokenx?",
    "https://h/v3/oauth/token/v3/oauth/token",
    "/v3/seatmaps/smp-eebf-016f/event-audit?limit=2",
    "/v3/seatmaps/smp-eebf-016f/event-audits",
    "/v1/ünï",
    "/v1/ünï?q",
    "a?b?",
    "",
    "?",
]


@pytest.mark.parametrize("path", PATHS)
def test_path_patterns_match_as_re2_and_re_do(path: str) -> None:
    pattern = path + r"(?:\?|$)"
    matcher = url_regex(pattern)
    assert isinstance(matcher, PathPattern) == (path != "a?b")  # `b?` is a quantifier: RE2 decides
    rng = random.Random(path)
    urls = URLS + [
        "".join(rng.choice(["/v3", "/oauth", "/token", "?", "\n", "x"]) for _ in range(5)) for _ in range(200)
    ]
    for url in urls:
        assert matcher.search(url) == grading_pattern(pattern).search(url) == bool(re.search(pattern, url)), (
            url
        )


@pytest.mark.parametrize(
    "pattern", [r"v3/(a|b)(?:\?|$)", r"v3/[(?:\?|$)", r"v3/x", r"(?:\?|$)x", r"v3/\d+(?:\?|$)"]
)
def test_other_patterns_are_left_to_re2(pattern: str) -> None:
    assert url_regex(pattern) is grading_pattern(pattern)


def _compiled_by_re2(source: str) -> tuple[str, str, bool] | str:
    """What ``patterns._compile`` made of ``source`` before literals skipped RE2: (source, needle,
    has a program), or the error's class name."""
    from apiflow.world import patterns

    if len(source) > patterns.MAX_PATTERN_LENGTH:
        return "PatternError"
    try:
        regexp = patterns.re2.compile(source, patterns._OPTIONS)
    except patterns.re2.error:
        return "PatternError"
    if regexp.programsize > patterns.MAX_PROGRAM_SIZE:
        return "PatternError"
    needle, whole = patterns._leading_literal(source)
    if whole:
        return (source, needle, False)
    return (source, "" if patterns._top_level_alternation(source) else needle, True)


def _compiled_now(source: str) -> tuple[str, str, bool] | str:
    from apiflow.world.patterns import PatternError, _compile

    try:
        got = _compile(source)
    except PatternError:
        return "PatternError"
    return (got.source, got.needle, got.regexp is not None)


def _random_patterns(count: int) -> list[str]:
    rng = random.Random(11)
    pieces = ["v3", "/", "a", "-", r"\-", r"\~", r"\.", ".", "?", "(?:", ")", "|", "$", "^", "[", "]",
              "*", "+", "{2}", "\\", r"\d", "é", r"\é", "\x00", r"\ ", "~", "_", "(", "x{"]  # fmt: skip
    out = [
        "",
        "a" * 989,
        "a" * 990,
        "a" * 991,
        "a" * 996,
        "a" * 1100,
        r"\-" * 495,
        "a" * 982 + r"(?:\?|$)",
        "a" * 983 + r"(?:\?|$)",
    ]
    for _ in range(count):
        out.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))))
        out.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 8))) + r"(?:\?|$)")
    return out


def test_literals_compiled_without_re2_are_what_re2_made_of_them() -> None:
    for source in _random_patterns(3000):
        assert _compiled_now(source) == _compiled_by_re2(source), source


def test_url_patterns_are_what_they_were_when_re2_compiled_each() -> None:
    """``url_regex`` against its former self: RE2 compiled the whole pattern first, then the prefix."""
    from apiflow.world.patterns import PatternError, compile_pattern

    def former(pattern: str) -> object:
        compiled = grading_pattern(pattern)
        if compiled.regexp is None or not pattern.endswith(r"(?:\?|$)"):
            return ("safe", compiled.source, compiled.needle, compiled.regexp is None)
        try:
            prefix = compile_pattern(pattern[: -len(r"(?:\?|$)")])
        except PatternError:
            return ("safe", compiled.source, compiled.needle, False)
        if prefix.regexp is not None:
            return ("safe", compiled.source, compiled.needle, False)
        return ("path", prefix.needle)

    for pattern in _random_patterns(3000):
        got = url_regex(pattern)
        now = (
            ("path", got.needle)
            if isinstance(got, PathPattern)
            else ("safe", got.source, got.needle, got.regexp is None)
        )
        assert now == former(pattern), pattern
