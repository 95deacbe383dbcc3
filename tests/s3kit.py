"""Helpers for tests against the moto S3 server (the fixture itself is in tests/conftest.py)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def s3_options(endpoint: str) -> dict[str, object]:
    """s3fs storage options for the moto endpoint."""
    return {"key": "foo", "secret": "foo", "client_kwargs": {"endpoint_url": endpoint}}


def fresh_bucket(endpoint: str, bucket: str) -> dict[str, object]:
    """Reset the moto server, create ``bucket`` and return its storage options."""
    import requests
    import s3fs

    requests.post(f"{endpoint}/moto-api/reset", timeout=10)
    s3fs.S3FileSystem.clear_instance_cache()
    options = s3_options(endpoint)
    s3fs.S3FileSystem(**options).mkdir(bucket)
    return options
