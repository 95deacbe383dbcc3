"""Fixtures of the secrets tests: fake provider keys in the environment, a private Ray that inherits them."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PLUGIN_TESTS = Path(__file__).resolve().parents[1] / "plugins"
"""``pluginkit`` (throwaway plug-in distributions), for the plug-in error tests."""
if str(PLUGIN_TESTS) not in sys.path:
    sys.path.insert(0, str(PLUGIN_TESTS))


@dataclass(frozen=True)
class FakeKeys:
    """Credentials that must never appear in anything the harness writes."""

    env: dict[str, str]
    """Environment variables set before Ray starts (so every actor inherits them)."""
    grid_api_key: str
    """An ``api_key`` grid param (transport params travel to the actors inside the spec)."""

    @property
    def all(self) -> dict[str, str]:
        return {**self.env, "grid params api_key": self.grid_api_key}


FAKE_KEYS = FakeKeys(
    env={
        "OPENAI_API_KEY": "sk-proj-FAKEenvOPENAI0123456789abcdefXYZ",
        "ANTHROPIC_API_KEY": "sk-ant-api03-FAKEenvANTHROPIC9876543210zyxw",
        "HF_TOKEN": "hf_FAKEenvHUGGINGFACEtoken13579",
        "APIFLOW_TEST_SECRET": "FAKEenvPLAINsecret-24680-qwerty",
    },
    grid_api_key="gridPARAMkey-FAKE-112233445566778899",
)


def _pids_mentioning(text: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            pids.append(int(entry))
    return pids


@pytest.fixture(scope="module")
def fake_keys() -> Iterator[FakeKeys]:
    """The fake keys, in ``os.environ`` for this module only (restored afterwards)."""
    patch = pytest.MonkeyPatch()
    for name, value in FAKE_KEYS.env.items():
        patch.setenv(name, value)
    try:
        yield FAKE_KEYS
    finally:
        patch.undo()


@pytest.fixture(scope="module")
def keyed_ray(fake_keys: FakeKeys) -> Iterator[Path]:
    """A private local Ray started *after* the keys are set; yields its temp dir (its logs are scanned too).

    Stopped by its own process ids (never ``ray stop``), the temp dir removed.
    """
    import ray

    temp_dir = tempfile.mkdtemp(prefix="afs-", dir="/tmp")  # unix socket paths must stay short
    ray.init(
        num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, logging_level="ERROR", log_to_driver=False,
        _node_ip_address="127.0.0.1",  # loopback only
    )
    try:
        yield Path(temp_dir)
    finally:
        ray.shutdown()
        for pid in _pids_mentioning(temp_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(temp_dir, ignore_errors=True)
