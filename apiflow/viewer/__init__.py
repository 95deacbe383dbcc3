"""The static transcript viewer: ``apiflow view RESULTS --out SITE`` (docs/design/083-viewer.md).

Leaderboard -> model -> task -> trial pages, plain HTML with one small script for filters and
collapsing; no server, no network, every transcript string escaped.
"""

from apiflow.viewer.build import SiteStats, build_site

__all__ = ["SiteStats", "build_site"]
