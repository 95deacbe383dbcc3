"""``apiflow report`` reads a grid's rows from S3 (a moto server on 127.0.0.1)."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from s3kit import fresh_bucket

from apiflow.analysis.table import load_table
from apiflow.cli import main
from apiflow.results.record import TrialRecord
from apiflow.results.rows import ROW_SCHEMA, record_to_row

from ._helpers import our_record

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module")
def bucket(moto_endpoint):
    """A bucket on the moto server holding per-trial rows and a compacted copy of them."""
    import s3fs

    endpoint = moto_endpoint
    options = fresh_bucket(endpoint, "grids")
    fs = s3fs.S3FileSystem(**options)
    rows = []
    for epoch, verdict in enumerate("CIC", 1):
        for task in ("v1-w01-sub01", "v1-w02-sub01"):
            rows.append(
                record_to_row(
                    TrialRecord.model_validate(our_record("apiflow/oracle", task, epoch, verdict))
                )
            )
    for i, row in enumerate(rows):
        sink = io.BytesIO()
        pq.write_table(pa.Table.from_pylist([row], schema=ROW_SCHEMA), sink)
        fs.pipe_file(f"grids/demo/rows/model=oracle/{i}.parquet", sink.getvalue())
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=ROW_SCHEMA), sink)
    fs.pipe_file("grids/demo/compacted/model=oracle.parquet", sink.getvalue())
    fs.pipe_file("grids/demo/manifest.json", b"{}")
    yield endpoint, options


def test_load_table_from_s3_dedupes(bucket):
    _, options = bucket
    table = load_table(["s3://grids/demo"], storage_options=options)
    assert table.num_rows == 6
    assert sorted(table["verdict"].to_pylist()) == ["C", "C", "C", "C", "I", "I"]


def test_cli_report_from_s3_with_the_aws_environment(bucket, tmp_path, monkeypatch):
    import s3fs

    endpoint, _ = bucket
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    s3fs.S3FileSystem.clear_instance_cache()
    assert main(["report", "s3://grids/demo", "--out", str(tmp_path), "--bootstrap", "10"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["meta"]["trials"], summary["pass_rates"]["all"]["passes"]) == (6, 4)
