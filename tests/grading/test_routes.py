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
