"""Fixtures for the grid-runner tests: a moto S3 server, a private in-process Ray, process helpers."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from clusterkit import free_port, kill_all, pids_mentioning


@pytest.fixture(scope="module")
def ray_session():
    """A private in-process Ray (2 CPUs, its own short temp dir), shut down after the module."""
    import ray

    temp_dir = tempfile.mkdtemp(prefix="afr-", dir="/tmp")  # unix socket paths must stay short
    ray.init(
        num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, logging_level="ERROR", log_to_driver=False
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        kill_all(pids_mentioning(temp_dir))
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def moto_endpoint():
    """A real moto S3 server on 127.0.0.1 (module scope), with dummy credentials."""
    from moto.server import ThreadedMotoServer

    keys = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_PROFILE")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(AWS_ACCESS_KEY_ID="foo", AWS_SECRET_ACCESS_KEY="foo", AWS_DEFAULT_REGION="us-east-1")
    os.environ.pop("AWS_PROFILE", None)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def s3_out(moto_endpoint):
    """A fresh bucket: ``(url, storage_options)``."""
    import requests
    import s3fs

    requests.post(f"{moto_endpoint}/moto-api/reset", timeout=10)
    s3fs.S3FileSystem.clear_instance_cache()
    options = {"key": "foo", "secret": "foo", "client_kwargs": {"endpoint_url": moto_endpoint}}
    s3fs.S3FileSystem(**options).mkdir("grid")
    return "s3://grid/out", options
