"""Inspect AI ``.eval`` log files written and read without inspect_ai.

An ``.eval`` file is a zip of JSON members (Inspect's log format version 2)::

    _journal/start.json           {version, eval, plan}: what the run was
    samples/<id>_epoch_<n>.json   one EvalSample per trial
    summaries.json                one thin EvalSampleSummary per sample (the viewer's list)
    header.json                   the EvalLog without samples: eval, plan, results, stats, status

We write members with the standard library (deflate, fixed timestamps, so the same records give
the same bytes) and Inspect's own reader is the test of the format (tests/interop). The header's
``eval.metadata["apiflow_export"]`` marks a log as ours: reading refuses any other log rather than
guessing at records Inspect wrote (docs/design/082-inspect-interop.md).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from apiflow.errors import UsageError
from apiflow.interop.samples import DEFAULT_SCORER, RECORD_KEY, is_unscored, record_to_sample, sample_name
from apiflow.version import __version__

LOG_VERSION: Final = 2
EXPORT_KEY: Final = "apiflow_export"
EXPORT_FORMAT: Final = 1
HEADER: Final = "header.json"
START: Final = "_journal/start.json"
SUMMARIES: Final = "summaries.json"
_ZIP_TIME: Final = (1980, 1, 1, 0, 0, 0)
_LEVEL: Final = 1  # deflate level: 1 writes ~3x faster than the default 6 for ~10 % more bytes
_SUMMARY_TEXT: Final = 5120  # Inspect thins summary text to about this many characters
_ALPHABET: Final = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"  # shortuuid's


def short_id(*parts: str) -> str:
    """A 22-character id in Inspect's shortuuid alphabet, derived from content (never random)."""
    number = int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:16], "big")
    out = []
    for _ in range(22):
        number, digit = divmod(number, len(_ALPHABET))
        out.append(_ALPHABET[digit])
    return "".join(out)


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer past 64 bits, kept exactly: the record held it
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _add_usage(total: dict[str, Any], usage: dict[str, Any]) -> None:
    for key, value in usage.items():
        total[key] = total.get(key, 0) + value


def _thin(text: Any) -> Any:
    if isinstance(text, str) and len(text) > _SUMMARY_TEXT:
        return text[:_SUMMARY_TEXT] + "...\n(content truncated)"
    return text


def _summary(sample: dict[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in sample["metadata"].items() if k != RECORD_KEY}
    scores = sample["scores"]
    if scores:  # the list view needs values, not predicate payloads
        scores = {name: {"value": s["value"], "explanation": _thin(s.get("explanation")), "history": []}
                  for name, s in scores.items()}  # fmt: skip
    keep = ("model_usage", "total_time", "working_time", "started_at", "completed_at", "uuid")
    summary = {
        "id": sample["id"], "epoch": sample["epoch"], "input": _thin(sample["input"]), "target": "",
        "metadata": metadata, "scores": scores, **{k: sample[k] for k in keep if k in sample},
        "completed": True, "message_count": len(sample["messages"]),
    }  # fmt: skip
    if "error" in sample:
        summary["error"] = sample["error"]["message"]
    if "limit" in sample:
        summary["limit"] = sample["limit"]["type"]
    return summary


@dataclass
class EvalLogWriter:
    """One ``.eval`` log (one model on one bank), written a sample at a time.

    Args:
        path: The ``.eval`` file to create (its folder must exist).
        model: The model slug of every record added.
        bank: The bank (Inspect's task) of every record added.
    """

    path: Path
    model: str
    bank: str
    trials: int = 0
    scored: int = 0
    passed: int = 0
    _zip: zipfile.ZipFile | None = None
    _summaries: list[dict[str, Any]] = field(default_factory=list)
    _seen: set[tuple[str, int]] = field(default_factory=set)
    _ids: Any = field(default_factory=hashlib.sha256)
    _first: dict[str, Any] = field(default_factory=dict)
    _usage: dict[str, Any] = field(default_factory=dict)
    _times: list[str] = field(default_factory=list)
    _run_ids: set[str] = field(default_factory=set)
    _scorers: list[str] = field(default_factory=list)
    _max_epoch: int = 0

    def _write(self, name: str, data: bytes) -> None:
        if self._zip is None:
            self._zip = zipfile.ZipFile(self.path, "w", zipfile.ZIP_DEFLATED)
        info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data, compresslevel=_LEVEL)

    def add(self, trial: dict[str, Any]) -> None:
        """Write one trial's sample.

        Raises:
            UsageError: the same (task, trial) twice, which Inspect cannot hold in one log.
        """
        key = (str(trial["task_id"]), int(trial["trial"]))
        if key in self._seen:
            raise UsageError(f"{self.model}: trial {key[0]} t{key[1]} appears twice in the input")
        self._seen.add(key)
        sample = record_to_sample(trial)
        self._write(sample_name(*key), _dumps(sample))
        self._summaries.append(_summary(sample))
        self._ids.update(f"{key[0]}|{key[1]}|{sample['uuid']}\n".encode())
        self._first = self._first or trial
        self.trials += 1
        self._max_epoch = max(self._max_epoch, key[1])
        for usage in sample["model_usage"].values():
            _add_usage(self._usage, usage)
        provenance = trial.get("provenance") or {}
        if provenance.get("run_id"):
            self._run_ids.add(str(provenance["run_id"]))
        if sample.get("started_at"):
            self._times += [sample["started_at"], sample["completed_at"]]
        for name in sample["scores"] or {}:
            if name not in self._scorers:
                self._scorers.append(name)
        if not is_unscored(trial):
            self.scored += 1
            self.passed += trial.get("verdict") == "C"

    def _spec(self) -> dict[str, Any]:
        digest = self._ids.hexdigest()
        first = self._first
        ours = first.get("apiflow") or {}
        created = min(self._times) if self._times else "1970-01-01T00:00:00+00:00"
        run_id = next(iter(self._run_ids)) if len(self._run_ids) == 1 else short_id("run", digest)
        task_ids = sorted({task for task, _ in self._seen})
        return {
            "eval_id": short_id("eval", self.model, self.bank, digest), "run_id": run_id, "created": created,
            "task": f"apiflow/{self.bank}", "task_id": short_id("task", self.bank), "task_version": 0,
            "dataset": {"name": self.bank, "samples": len(task_ids), "sample_ids": task_ids},
            "model": str(first.get("model_api") or self.model), "config": {"epochs": self._max_epoch},
            "packages": {"apiflow": __version__},
            "scorers": [{"name": name} for name in self._scorers or [DEFAULT_SCORER]],
            "metadata": {EXPORT_KEY: {
                "format": EXPORT_FORMAT, "model": self.model, "bank": self.bank,
                "bank_hash": ours.get("bank_hash"), "trials": self.trials, "digest": digest,
            }},
        }  # fmt: skip

    def _results(self) -> dict[str, Any]:
        scores = [
            {
                "name": name,
                "scorer": name,
                "scored_samples": self.scored,
                "unscored_samples": self.trials - self.scored,
                "params": {},
                "metrics": {
                    "accuracy": {
                        "name": "accuracy",
                        "params": {},
                        "value": self.passed / self.scored if self.scored else 0.0,
                    }
                },
            }  # fmt: skip
            for name in self._scorers
        ]
        return {"total_samples": self.trials, "completed_samples": self.scored, "scores": scores}

    def close(self) -> None:
        """Write the summaries, the journal start and the header, and close the file."""
        if self.trials == 0:
            raise UsageError(f"{self.model}: no trials to export")
        spec = self._spec()
        # Inspect's "success" promises every dataset sample at every epoch (its streaming reader
        # walks sample_ids x epochs); a grid with trials missing is an interrupted run to it.
        complete = self.trials == len(spec["dataset"]["sample_ids"]) * self._max_epoch
        spec["metadata"][EXPORT_KEY]["complete"] = complete
        plan = {"name": "plan", "steps": [], "config": {}}
        self._write(START, _dumps({"version": LOG_VERSION, "eval": spec, "plan": plan}))
        self._write(SUMMARIES, _dumps(self._summaries))
        stats = {
            "started_at": spec["created"],
            "completed_at": max(self._times) if self._times else spec["created"],
            "model_usage": {spec["model"]: self._usage},
        }
        header = {
            "version": LOG_VERSION, "status": "success" if complete else "cancelled", "eval": spec, "plan": plan,
            "results": self._results(), "stats": stats,
        }  # fmt: skip
        self._write(HEADER, _dumps(header))
        assert self._zip is not None
        self._zip.close()


def export_marker(path: str | Path) -> dict[str, Any]:
    """The export block of a log written by ``apiflow transcripts export``.

    Raises:
        UsageError: not a zip ``.eval`` log, or one Inspect (not apiflow) wrote.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            header = orjson.loads(archive.read(HEADER))
    except (OSError, KeyError, zipfile.BadZipFile, orjson.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a readable Inspect .eval log ({exc})") from None
    marker = ((header.get("eval") or {}).get("metadata") or {}).get(EXPORT_KEY)
    if not isinstance(marker, dict) or marker.get("format") != EXPORT_FORMAT:
        raise UsageError(
            f"{path}: an Inspect log not written by `apiflow transcripts export`; only those can be ingested"
        )
    return marker


def sample_members(path: str | Path) -> list[str]:
    """The sample members of an exported log, in the order they were written."""
    export_marker(path)
    with zipfile.ZipFile(path) as archive:
        return [n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json")]


def read_samples(path: str | Path, members: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """The EvalSample JSON of the given members (default: all) of an exported log, one at a time."""
    names = sample_members(path) if members is None else members
    with zipfile.ZipFile(path) as archive:
        for name in names:
            yield orjson.loads(archive.read(name))
