"""``apiflow view s3://…``: a grid's result store on S3 (a moto server on 127.0.0.1) gives the same site."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from s3kit import fresh_bucket

from apiflow.cli import main

pytestmark = pytest.mark.s3


def test_site_from_s3_equals_the_local_one(moto_endpoint, own_grid, grid_site, tmp_path):
    import s3fs

    options = fresh_bucket(moto_endpoint, "grids")
    fs = s3fs.S3FileSystem(**options)
    for path in own_grid.rglob("*"):
        if path.is_file():
            fs.pipe_file(f"grids/run/{path.relative_to(own_grid).as_posix()}", path.read_bytes())
    out = tmp_path / "site"
    code = main(["view", "s3://grids/run", "--out", str(out), "--storage-options", json.dumps(options)])
    assert code == 0
    local = sorted(p.relative_to(grid_site) for p in grid_site.rglob("*.html"))
    assert sorted(p.relative_to(out) for p in out.rglob("*.html")) == local
    for page in local:
        if page != Path("index.html"):  # the leaderboard names its source
            assert (out / page).read_bytes() == (grid_site / page).read_bytes(), page
    assert "s3://grids/run" in (out / "index.html").read_text()
