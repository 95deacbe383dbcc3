"""Fixtures shared across test packages: a real S3-compatible endpoint (moto's server) on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from s3kit import free_port


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A real moto S3 server on 127.0.0.1 for one test module, with dummy credentials.

    Credentials are set for the module and restored afterwards, so nothing leaks between modules.
    """
    import s3fs
    from moto.server import ThreadedMotoServer

    patch = pytest.MonkeyPatch()
    patch.setenv("AWS_ACCESS_KEY_ID", "foo")
    patch.setenv("AWS_SECRET_ACCESS_KEY", "foo")
    patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    patch.delenv("AWS_PROFILE", raising=False)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        s3fs.S3FileSystem.clear_instance_cache()
        patch.undo()
