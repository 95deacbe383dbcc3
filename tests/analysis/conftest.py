"""Fixtures of the analysis tests."""

from __future__ import annotations

import pytest

from ._helpers import trial


@pytest.fixture
def tiny_rows() -> list[dict]:
    """Two models, two worlds; solo steps 1-2 and chain 1to02 in each world."""
    rows = []
    outcomes = {
        # (model, task): verdicts of its epochs
        ("m1", "t-w01-sub01"): "CCCC",
        ("m1", "t-w01-sub02"): "CCI" + "I",
        ("m1", "t-w01-chain-1to02"): "CIII",
        ("m1", "t-w02-sub01"): "CCCC",
        ("m1", "t-w02-sub02"): "CCCC",
        ("m1", "t-w02-chain-1to02"): "CCC" + "",
        ("m2", "t-w01-sub01"): "CCII",
        ("m2", "t-w01-sub02"): "IIII",
        ("m2", "t-w01-chain-1to02"): "IIII",
        ("m2", "t-w02-sub01"): "CCCC",
        ("m2", "t-w02-sub02"): "CCCI",
        ("m2", "t-w02-chain-1to02"): "CCII",
    }
    for (model, task), verdicts in outcomes.items():
        padded = verdicts.ljust(4, "U")
        for epoch, v in enumerate(padded, 1):
            verdict = "" if v == "U" else v
            rows.append(trial(model, task, verdict, g1=v == "C" or None, g2=v == "C" or None, epoch=epoch))
    return rows
