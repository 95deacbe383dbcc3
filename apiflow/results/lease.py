"""One writer per results folder: a lease that a live driver renews and a dead one lets expire.

Two drivers on one folder would both pay for the same trials (batch objects are create-only by name,
but two writers batch the same trials under different names). So a driver takes the folder's lease
before it starts and renews it while it runs; another driver finding a live lease is refused with who
holds it and until when. A holder that dies stops renewing and its lease lapses after ``TTL_S``; one on this machine whose process
is gone frees the folder at once (a SIGKILLed driver's rerun need not wait).

Taking a lease is fenced: each holder gets the next token, claimed by creating ``_lease/<token>``
create-only (an atomic create on a local folder, a conditional PUT on S3), so of two drivers racing for
the same token exactly one wins. ``_lease.json`` names the current holder; a holder that finds a newer
token there when it renews has lost the folder and must stop (``LeaseLost``).
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from apiflow.errors import UsageError
from apiflow.results.objects import ObjectFolder

TTL_S = 120.0
"""How long a lease outlives its last renewal (a driver renews about every ``TTL_S / 6``)."""

CURRENT = "_lease.json"
"""Names starting with "_" are metadata to every reader of the folder (not a trial, not a row)."""


class LeaseLost(RuntimeError):
    """Another driver took the folder (this one's lease lapsed): stop writing."""


@dataclass
class Lease:
    """This driver's hold on a results folder."""

    objects: ObjectFolder
    holder: str
    token: int
    expires: float = 0.0

    def renew(self, now: float | None = None) -> None:
        """Extend the lease; ``LeaseLost`` when another holder has taken the folder meanwhile."""
        found = _read(self.objects)
        if found is not None and int(found.get("token", 0)) != self.token:
            raise LeaseLost(f"{self.objects.root}: taken over by {found.get('holder')} (token {found.get('token')})")
        self._write((now if now is not None else time.time()) + TTL_S)

    def release(self) -> None:
        """Give the folder up now (the next driver need not wait for the lease to lapse)."""
        found = _read(self.objects)
        if found is None or int(found.get("token", 0)) == self.token:
            self._write(0.0)

    def _write(self, expires: float) -> None:
        self.expires = expires
        body = {"holder": self.holder, "token": self.token, "expires": expires, "written": time.time(),
                "host": socket.gethostname(), "pid": os.getpid()}  # fmt: skip
        self.objects.overwrite(self.objects.path(CURRENT), json.dumps(body).encode())


def holder_name(attempt: str) -> str:
    """Who holds a lease, as a refused driver is told: host, pid and the attempt's id."""
    return f"{socket.gethostname()} pid {os.getpid()} (attempt {attempt})"


def check_free(objects: ObjectFolder, now: float | None = None) -> dict[str, Any] | None:
    """Refuse early, writing nothing, when a live driver holds the folder; the lease found, if any.

    Raises:
        UsageError: a live driver holds it (named, with when its lease lapses).
    """
    now = time.time() if now is None else now
    found = _read(objects)
    if found is not None and float(found.get("expires", 0.0)) > now and not _holder_gone(found):
        until = time.strftime("%H:%M:%S", time.localtime(float(found["expires"])))
        raise UsageError(
            f"{objects.root} is being written by another grid run ({found.get('holder')}); wait for it to "
            f"finish, or, if it died, rerun after its lease lapses at {until}"
        )
    return found


def take_lease(objects: ObjectFolder, holder: str, now: float | None = None) -> Lease:
    """The folder's lease for ``holder``.

    Raises:
        UsageError: a live driver holds it (named, with when its lease lapses), or another driver
            took the same token a moment ago.
    """
    now = time.time() if now is None else now
    found = check_free(objects, now)
    taken = [int(name.rsplit("/", 1)[-1]) for name in objects.list("_lease", "") if name.rsplit("/", 1)[-1].isdigit()]
    token = max([int(found.get("token", 0)) if found is not None else 0, *taken]) + 1
    if not objects.create_only(objects.path("_lease", f"{token:010d}"), holder.encode()):
        raise UsageError(f"{objects.root}: another grid run took this folder just now; wait for it to finish")
    lease = Lease(objects, holder, token)
    lease._write(now + TTL_S)
    return lease


def _holder_gone(found: dict[str, Any]) -> bool:
    """True when the lease's holder ran on this machine and its process no longer exists."""
    pid = found.get("pid")
    if found.get("host") != socket.gethostname() or not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def _read(objects: ObjectFolder) -> dict[str, Any] | None:
    try:
        data = json.loads(objects.cat(objects.path(CURRENT)))
    except FileNotFoundError:
        return None
    except ValueError:
        return None  # a damaged lease names no live holder: the next token still fences
    return data if isinstance(data, dict) else None
