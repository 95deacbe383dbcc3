"""Helpers for the damaged-store tests: a small real store, and damage done behind its back."""

from __future__ import annotations

from apiflow.agent import TrialSpec, trial_seed
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import make_model
from apiflow.results.rows import record_to_row
from apiflow.results.store import ResultStore
from apiflow.runner import play_trial_sync


def oracle_records() -> list:
    """Thirteen real offline trials (the oracle on every task of the sample bank)."""
    bank = load_bank(DEFAULT_BANK)
    out = []
    for task in bank.tasks.values():
        spec = TrialSpec(
            task=task, world=bank.world_of(task), seed=0, epoch=1, run_id="grid-run",
            bank_name=bank.name, bank_hash=bank.hash, model_slug="apiflow/oracle",
        )  # fmt: skip
        out.append(play_trial_sync(spec, make_model("apiflow/oracle", task, trial_seed(0, task.id, 1))))
    return out


def row(record):
    return record_to_row(record, panel="t", price_table="test")


def batch(store, records) -> str:
    """Store ``records`` as one batch; its batch object's path."""
    ids = [r.apiflow.trial_id for r in records]
    assert store.put_batch(ids, [(r, row(r)) for r in records])
    return store.batch_path(ids)


def alone(store, record) -> str:
    """Store ``record`` as a trial run alone; its row's path."""
    assert store.put_trial(record, row(record))
    return store.row_path(record.model, record.apiflow.trial_id)


def ids(records) -> set[str]:
    return {r.apiflow.trial_id for r in records}


def damaged(data: bytes, how: str) -> bytes:
    """``data`` overwritten with garbage, truncated, emptied, or with a few bytes changed."""
    if how == "flipped":
        return flip(data, b"apiflow/oracle")  # still parses: only a checksum can tell
    return {
        "garbage": b"\x00not a row object, nor a zip\xff" * 40,
        "truncated": data[: len(data) * 2 // 3],
        "empty": b"",
    }[how]


def flip(data: bytes, text: bytes) -> bytes:
    at = data.index(text)
    return data[:at] + text.upper() + data[at + len(text) :]


def damage(store, path: str, how: str) -> bytes:
    """Overwrite the object at ``path`` in place, behind the store's back; the bytes written."""
    bad = damaged(store.objects.cat(path), how)
    if store.local:
        with open(path, "wb") as handle:
            handle.write(bad)
    else:
        store.fs.pipe_file(path, bad)
    return bad


def reader(store) -> ResultStore:
    """Another process's reader of the same store."""
    return ResultStore(store.url, storage_options=store.storage_options, row_format=store.row_format)


def aside(store, path: str) -> str:
    """Where a reader moves the object at ``path``."""
    return store.objects.path("quarantine", store.quarantine.relative(path))
