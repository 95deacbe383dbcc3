"""``transcripts export`` of a grid's result store on S3 (a moto server on 127.0.0.1) writes the same
logs as the export of the same store on disk."""

from __future__ import annotations

import json

import pytest
from s3kit import fresh_bucket

from apiflow.cli import main

pytestmark = pytest.mark.s3


def test_a_grid_on_s3_exports_like_the_same_grid_on_disk(moto_endpoint, own_grid, tmp_path):
    import s3fs

    options = fresh_bucket(moto_endpoint, "grids")
    s3fs.S3FileSystem(**options).put(f"{own_grid}/", "grids/run/", recursive=True)
    export = ["transcripts", "export", "--format", "inspect"]
    assert (
        main([*export, "s3://grids/run", str(tmp_path / "s3"), "--storage-options", json.dumps(options)]) == 0
    )
    assert main([*export, str(own_grid), str(tmp_path / "disk")]) == 0
    from_s3 = sorted((tmp_path / "s3").glob("*.eval"))
    assert [p.name for p in from_s3] == sorted(p.name for p in (tmp_path / "disk").glob("*.eval"))
    for log in from_s3:
        assert log.read_bytes() == (tmp_path / "disk" / log.name).read_bytes()
