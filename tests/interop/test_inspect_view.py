"""``inspect view`` opens the exported logs: its server, on 127.0.0.1, lists them and serves them
through its API, and Inspect's own web viewer, in headless chromium, shows their samples.

Skipped where inspect_ai is not installed; the browser test follows tests/viewer's rule (skips
locally without chromium, fails in CI).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from s3kit import free_port
from viewer.conftest import browser  # noqa: F401 - the shared headless chromium fixture

from apiflow.interop import read_samples

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (the `inspect` extra)")
pytestmark = pytest.mark.slow  # one `inspect view` server for the module: ~10-30 s on a loaded machine

STARTUP_SECONDS = 180


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - loopback only
        return response.read()


@pytest.fixture(scope="module")
def view_server(own_logs: Path, tmp_path_factory) -> Iterator[str]:
    """``inspect view --log-dir <the logs>`` on a free loopback port; stopped by its own pid."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("inspect-view") / "server.log"
    log_file = log_path.open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "inspect_ai", "view", "--log-dir", str(own_logs), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                _get(f"{base}/api/log-files")
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"inspect view did not start: {log_path.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)
        log_file.close()


def test_the_server_lists_and_serves_every_log(view_server, own_logs):
    listed = json.loads(_get(f"{view_server}/api/log-files"))["files"]
    names = {Path(urllib.parse.urlparse(f["name"]).path).name for f in listed}
    assert names == {p.name for p in own_logs.glob("*.eval")}
    assert {f["task"] for f in listed} == {"apiflow/sample"}
    for entry in listed:
        quoted = urllib.parse.quote(entry["name"], safe="")
        header = json.loads(_get(f"{view_server}/api/logs/{quoted}?header-only=1"))
        assert header["eval"]["metadata"]["apiflow_export"]["format"] == 1
        assert header["results"]["total_samples"] > 0


def test_inspects_web_viewer_shows_the_samples(view_server, own_logs, browser, tmp_path):  # noqa: F811
    log = sorted(own_logs.glob("*.eval"))[0]
    samples = list(read_samples(log))
    ids = {s["id"] for s in samples}
    expected = f"{len(samples)} / {len(ids) * max(s['epoch'] for s in samples)} Samples"  # its footer
    browser.get(f"{view_server}/#/logs/{log.name}")
    deadline = time.monotonic() + 120
    text = ""
    while time.monotonic() < deadline:
        text = browser.find_element("tag name", "body").text
        if all(i in text for i in ids):
            break
        time.sleep(1)
    assert all(i in text for i in ids), text[:2000]
    assert "apiflow/sample" in text and expected in text
    browser.save_screenshot(str(tmp_path / "inspect-view.png"))
