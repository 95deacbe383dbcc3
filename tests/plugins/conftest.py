"""The plug-in tests reuse the grid-runner tests' process helpers (``tests/cluster/clusterkit.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

CLUSTER_TESTS = Path(__file__).resolve().parents[1] / "cluster"
if str(CLUSTER_TESTS) not in sys.path:
    sys.path.insert(0, str(CLUSTER_TESTS))
