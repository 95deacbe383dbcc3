"""Shared fixtures for the results tests: a small valid trial record factory."""

from __future__ import annotations

from typing import Any

import pytest
from s3kit import fresh_bucket

from apiflow.results.record import ApiflowBlock, Provenance, Termination, Tokens, TokensDetail, TrialRecord
from apiflow.results.store import ResultStore


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


@pytest.fixture
def s3_url(moto_endpoint):
    """A fresh bucket on the moto server: ``(url, storage_options)``."""
    return "s3://results/grid-a", fresh_bucket(moto_endpoint, "results")


@pytest.fixture(params=["local", "local-arrow", pytest.param("s3", marks=pytest.mark.s3)])
def store(request, tmp_path):
    """A result store on a local folder (Parquet or Arrow rows) and on moto S3."""
    if request.param.startswith("local"):
        return ResultStore(
            str(tmp_path / "out"), row_format="arrow" if "arrow" in request.param else "parquet"
        )
    url, options = request.getfixturevalue("s3_url")
    return ResultStore(url, storage_options=options)
