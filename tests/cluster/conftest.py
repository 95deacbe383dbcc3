"""Fixtures for the grid-runner tests: a moto S3 server, a private in-process Ray, process helpers."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from clusterkit import kill_all, pids_mentioning
from s3kit import fresh_bucket

# Grids load their bank through the parsed-bank cache (apiflow.bank.cache): keep the tests' entries
# out of the user's ~/.cache (set before any Ray starts, so its workers inherit it).
# One folder for every test session of this user (entries are content-keyed: sharing it is safe).
os.environ.setdefault(
    "APIFLOW_BANK_CACHE", os.path.join(tempfile.gettempdir(), f"apiflow-bank-cache-tests-{os.getuid()}")
)


@pytest.fixture(scope="module")
def ray_session():
    """A private in-process Ray (2 CPUs, its own short temp dir), shut down after the module."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="afr-", dir="/tmp")  # unix socket paths must stay short
    from cluster.session import _loopback_only

    with _loopback_only():  # as the private Ray of grid run: every listener on 127.0.0.1
        ray.init(
            num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, logging_level="ERROR", log_to_driver=False,
            _node_ip_address="127.0.0.1",
        )
    try:
        yield ray
    finally:
        ray.shutdown()
        kill_all(pids_mentioning(temp_dir))
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture
def s3_out(moto_endpoint):
    """A fresh bucket: ``(url, storage_options)``."""
    return "s3://grid/out", fresh_bucket(moto_endpoint, "grid")
