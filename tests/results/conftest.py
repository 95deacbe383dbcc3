"""Shared fixtures for the results tests: a small valid trial record factory."""

from __future__ import annotations

from typing import Any

import pytest

from apiflow.results.record import ApiflowBlock, Provenance, Termination, Tokens, TokensDetail, TrialRecord


def build_record(
    *,
    model: str = "apiflow/sim:careful",
    task_id: str = "sample-w01-sub02",
    epoch: int = 1,
    trial_id: str = "t" * 64,
    passed: bool | None = True,
    termination: Termination = Termination.ANSWERED,
    retries: list[dict[str, Any]] | None = None,
    cost_usd: float | None = 0.0,
) -> TrialRecord:
    """A syntactically complete record (not produced by a real trial)."""
    verdict = "" if passed is None else ("C" if passed else "I")
    verifier = None
    if passed is not None:
        verifier = {
            "scorer": "validator_scorer",
            "value": verdict,
            "explanation": "all signature predicates matched (G1 state ✓, G2 answer ✓)" if passed else "x",
            "metadata": {
                "sub_predicates": {
                    "g1_passed": True,
                    "g2_passed": passed,
                    "predicates_passed": 3 if passed else 2,
                    "predicates_total": 3,
                },
                "partial_score": 1.0 if passed else 2 / 3,
            },
        }
    return TrialRecord(
        model=model,
        model_api=model,
        task_id=task_id,
        trial=epoch,
        verdict=verdict,
        passed=passed,
        tokens=Tokens(input=10, output=5, cache=2, total=17),
        duration_s=0.25,
        messages=[
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "1", "name": "read", "arguments": {}},
                    {"id": "2", "name": "read", "arguments": {}},
                ],
            },
            {"role": "tool", "content": "ok", "tool_call_id": "1", "function": "read"},
            {"role": "tool", "content": "ok", "tool_call_id": "2", "function": "read"},
            {"role": "assistant", "content": "done"},
        ],
        verifier=verifier,
        provenance=Provenance(run_id="run-1", epoch=epoch, created="2026-12-02T00:00:00+00:00"),
        apiflow=ApiflowBlock(
            trial_id=trial_id,
            bank="sample",
            bank_hash="b" * 64,
            seed=7,
            termination=termination,
            tokens=TokensDetail(input=10, output=5, cache_read=2, cache_write=1, reasoning=3),
            cost_usd=cost_usd,
            retries=retries or [],
        ),
    )


@pytest.fixture
def make_record():
    """Factory fixture: ``make_record(**overrides) -> TrialRecord``."""
    return build_record


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def moto_endpoint():
    """A real moto S3 server on 127.0.0.1 (module scope), with dummy credentials."""
    import os

    from moto.server import ThreadedMotoServer

    saved = {
        k: os.environ.get(k)
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_PROFILE")
    }
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
def s3_url(moto_endpoint):
    """A fresh bucket on the moto server: ``(url, storage_options)``."""
    import requests
    import s3fs

    requests.post(f"{moto_endpoint}/moto-api/reset", timeout=10)
    s3fs.S3FileSystem.clear_instance_cache()
    options = {"key": "foo", "secret": "foo", "client_kwargs": {"endpoint_url": moto_endpoint}}
    fs = s3fs.S3FileSystem(**options)
    fs.mkdir("results")
    return "s3://results/grid-a", options
