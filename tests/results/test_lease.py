"""One writer per results folder: a live lease refuses a second driver, a dead one's lapses, takeover fences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apiflow.errors import UsageError
from apiflow.results.lease import TTL_S, LeaseLost, take_lease
from apiflow.results.objects import ObjectFolder


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def folder(request, tmp_path: Path) -> ObjectFolder:
    if request.param == "local":
        return ObjectFolder(str(tmp_path / "out"))
    import s3fs

    endpoint = request.getfixturevalue("moto_endpoint")
    options = {"client_kwargs": {"endpoint_url": endpoint}}
    s3fs.S3FileSystem(**options).mkdir(f"lease-{tmp_path.name.lower()[-20:]}")
    return ObjectFolder(f"s3://lease-{tmp_path.name.lower()[-20:]}/grid", options)


def test_a_live_lease_refuses_a_second_driver_and_names_the_holder(folder: ObjectFolder) -> None:
    first = take_lease(folder, "host-a pid 1", now=1000.0)
    with pytest.raises(UsageError, match="being written by another grid run \\(host-a pid 1\\)"):
        take_lease(folder, "host-b pid 2", now=1000.0 + TTL_S / 2)
    first.release()
    take_lease(folder, "host-b pid 2", now=1001.0)  # released: no wait for the lapse


def test_a_dead_holders_lease_lapses_and_the_taker_fences_it_out(folder: ObjectFolder) -> None:
    dead = take_lease(folder, "host-a pid 1", now=1000.0)
    taker = take_lease(folder, "host-b pid 2", now=1000.0 + TTL_S + 1)  # never renewed: lapsed
    assert taker.token == dead.token + 1
    with pytest.raises(LeaseLost, match="taken over by host-b pid 2"):
        dead.renew()  # the old holder wakes up: it must stop writing
    dead.release()  # and giving up what it no longer holds does not free the taker's lease
    with pytest.raises(UsageError, match="host-b pid 2"):
        take_lease(folder, "host-c pid 3", now=1000.0 + TTL_S + 2)


def test_two_drivers_racing_for_one_token_get_one_lease(folder: ObjectFolder) -> None:
    assert folder.create_only(folder.path("_lease", f"{1:010d}"), b"racer")  # another driver won token 1
    lease = take_lease(folder, "host-a pid 1", now=1000.0)
    assert lease.token == 2  # the listed tokens count: never the one a racer holds


def test_the_loser_of_a_race_for_a_token_is_refused(folder: ObjectFolder, monkeypatch) -> None:
    """Both read the folder before either claimed token 1; the create-only claim lets one through."""
    monkeypatch.setattr(folder, "list", lambda prefix, suffix: [])  # what both saw before the claims
    take_lease(folder, "host-a pid 1", now=1000.0)
    monkeypatch.setattr("apiflow.results.lease._read", lambda objects: None)
    with pytest.raises(UsageError, match="took this folder just now"):
        take_lease(folder, "host-b pid 2", now=1000.0)


def test_a_holder_on_this_machine_whose_process_is_gone_frees_the_folder_at_once(folder: ObjectFolder) -> None:
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lease = take_lease(folder, "host-a pid dead", now=1000.0)
    record = json.loads(folder.cat(folder.path("_lease.json")))
    folder.overwrite(folder.path("_lease.json"), json.dumps({**record, "pid": int(gone.stdout)}).encode())
    assert take_lease(folder, "the rerun", now=1001.0).token == lease.token + 1  # no wait for the lapse
