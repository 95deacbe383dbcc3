"""``apiflow transcripts export --format inspect``: trial records -> Inspect AI ``.eval`` logs.

One log per (model, bank): an Inspect log is one task evaluated with one model, and a bank is our
task (its tasks are the samples, a record's ``trial`` the epoch). RESULTS is read as the viewer
reads it (``apiflow.results.source``: a grid's result store, local or ``s3://``, or a folder of
schema-1.0 trial JSONs); records stream through, one sample in memory at a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from apiflow.errors import UsageError
from apiflow.interop.evalzip import EvalLogWriter
from apiflow.results.source import open_source
from apiflow.results.store import model_token
from apiflow.results.taskid import parse_task_id

READ_CHUNK = 256


@dataclass(frozen=True)
class ExportedLog:
    """One written log: where, for which model and bank, and how many trials it holds."""

    path: Path
    model: str
    bank: str
    trials: int
    unscored: int


def bank_of(trial: dict[str, Any]) -> str:
    """Our record's bank name; a published record's task-id prefix (``v56``)."""
    bank = (trial.get("apiflow") or {}).get("bank")
    if bank:
        return str(bank)
    try:
        return parse_task_id(str(trial["task_id"])).bank
    except UsageError:
        return "tasks"  # a task id of neither shape: its records still export, under one name


def iter_trials(results: str, storage_options: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every trial record under RESULTS (a grid's failed-only trials once, as the report counts them).

    Raises:
        UsageError: RESULTS is missing, holds no trial JSONs, or a file is not a schema-1.0 trial.
    """
    source = open_source(results, storage_options)
    for chunk in source.read_chunks(READ_CHUNK):
        for path, data in chunk:
            try:
                trial = orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                raise UsageError(f"{path}: not JSON ({exc})") from None
            if not isinstance(trial, dict) or trial.get("schema_version") != "1.0":
                if source.grid and isinstance(trial, dict) and "schema_version" not in trial:
                    continue  # grid bookkeeping JSON beside the trials
                raise UsageError(f"{path}: not a schema-1.0 trial (schema_version missing or not '1.0')")
            yield trial


def log_name(model: str, bank: str) -> str:
    """The file name of one (model, bank) log inside an output folder."""
    return f"{model_token(model)}_{re.sub(r'[^A-Za-z0-9._-]', '_', bank)}.eval"


def export_inspect(
    trials: Iterable[dict[str, Any]], out: str | Path, models: Iterable[str] | None = None
) -> list[ExportedLog]:
    """Write the trials as Inspect ``.eval`` logs.

    Args:
        trials: Parsed schema-1.0 trial records.
        out: A ``.eval`` file (the trials must then be one model on one bank) or a folder that
            receives one ``<model>_<bank>.eval`` per (model, bank).
        models: Export only these model slugs.

    Raises:
        UsageError: nothing to export, several (model, bank) pairs for one ``.eval`` file, or a
            trial twice.
    """
    out = Path(out)
    single = out.suffix == ".eval"
    wanted = set(models) if models else None
    writers: dict[tuple[str, str], EvalLogWriter] = {}
    try:
        for trial in trials:
            model = str(trial.get("model", ""))
            if wanted is not None and model not in wanted:
                continue
            key = (model, bank_of(trial))
            writer = writers.get(key)
            if writer is None:
                if single and writers:
                    pairs = ", ".join(f"{m} on {b}" for m, b in [*writers, key])
                    raise UsageError(
                        f"{out}: one .eval holds one model on one bank, the input has several ({pairs}); "
                        "give a folder as OUT or pick one with --model"
                    )
                if not writers:  # made with the first log, once RESULTS has been read from
                    (out.parent if single else out).mkdir(parents=True, exist_ok=True)
                writer = EvalLogWriter(out if single else out / log_name(*key), *key)
                writers[key] = writer
            writer.add(trial)
        if not writers:
            raise UsageError("no trials to export" + (f" for {', '.join(sorted(wanted))}" if wanted else ""))
        for writer in writers.values():
            writer.close()
    except BaseException:
        for writer in writers.values():
            if writer._zip is not None:
                writer._zip.close()
            writer.path.unlink(missing_ok=True)  # never leave a half-written log behind
        raise
    return [ExportedLog(w.path, w.model, w.bank, w.trials, w.trials - w.scored) for w in writers.values()]
