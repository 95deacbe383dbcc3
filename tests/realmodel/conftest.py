"""The ``realmodel`` marker: tests against a real model on CPU, skipped unless asked for.

Registered here as well as in pyproject, so ``--strict-markers`` accepts it wherever pytest starts.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "realmodel: runs a real model on CPU (llama-cpp-python); needs APIFLOW_REALMODEL=1"
    )
