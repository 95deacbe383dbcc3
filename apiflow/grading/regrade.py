"""Re-grading published schema-1.0 transcripts and comparing with their recorded verdicts.

Each trial's grading spec is the predicate list recorded in its own verifier payload;
its evidence is rebuilt from its messages; the answer-comparison generation follows the
payload's marker. Files stream through a process pool in chunks, so memory stays flat
in the number of files and both cores work.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any

import orjson

from apiflow.errors import UsageError
from apiflow.grading.published import PublishedSpecError, SpecMemo, generation_of, specs_from_verifier
from apiflow.grading.rules import PUBLISHED, RULE_SETS
from apiflow.grading.transcript import evidence_from_transcript
from apiflow.grading.verdict import Grade, grade

CHUNK_FILES = 64
MAX_DISAGREEMENTS_SHOWN = 50


@dataclass(slots=True)
class RegradeSummary:
    """Counts over one regrade run (agreement counts are over determinable scored trials)."""

    files: int = 0
    bytes: int = 0
    unscored: int = 0
    determinable: int = 0
    indeterminate: int = 0
    errors: int = 0
    verdict_agree: int = 0
    g1_agree: int = 0
    g2_agree: int = 0
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    unsettled: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def merge(self, other: RegradeSummary) -> None:
        """Add another summary's counts and lists to this one."""
        for name in (
            "files",
            "bytes",
            "unscored",
            "determinable",
            "indeterminate",
            "errors",
            "verdict_agree",
            "g1_agree",
            "g2_agree",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.disagreements.extend(other.disagreements)
        self.unsettled.extend(other.unsettled)
        self.failures.extend(other.failures)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {
            "files": self.files,
            "bytes": self.bytes,
            "unscored": self.unscored,
            "determinable": self.determinable,
            "indeterminate": self.indeterminate,
            "errors": self.errors,
            "verdict_agree": self.verdict_agree,
            "g1_agree": self.g1_agree,
            "g2_agree": self.g2_agree,
            "disagreements": sorted(self.disagreements, key=lambda d: d["path"]),
            "indeterminate_trials": sorted(self.unsettled, key=lambda d: d["path"]),
            "error_files": sorted(self.failures, key=lambda d: d["path"]),
        }


def _first_difference(recorded: list[Mapping[str, Any]], ours: list[Any]) -> str | None:
    for entry, result in zip(recorded, ours, strict=False):
        if bool(entry.get("passed")) != bool(result.passed):
            return str(entry.get("label"))
    return None


def recorded_rules(verifier: Mapping[str, Any]) -> str:
    """The rule set a payload was graded with (``metadata.rules``); ``published-1.0`` when it names
    none or one we do not know (published transcripts carry no rules key)."""
    metadata = verifier.get("metadata")
    name = metadata.get("rules") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name in RULE_SETS else PUBLISHED.name


def check_trial(
    path: str,
    trial: Mapping[str, Any],
    rules: str | None,
    summary: RegradeSummary,
    memo: SpecMemo | None = None,
) -> None:
    """Regrade one parsed trial and add the outcome to ``summary`` (``rules=None``: its recorded rules;
    ``memo``: specs already built by this regrade)."""
    verifier = trial.get("verifier")
    if not trial.get("verdict") or not isinstance(verifier, dict):
        summary.unscored += 1
        return
    specs = specs_from_verifier(verifier, memo)
    result = grade(
        specs,
        [],
        [],
        evidence_from_transcript(trial),
        rules=rules or recorded_rules(verifier),
        generation=generation_of(verifier),
    )
    tally_trial(summary, path, trial, verifier, result)


def tally_trial(
    summary: RegradeSummary, path: str, trial: Mapping[str, Any], verifier: Mapping[str, Any], result: Grade
) -> None:
    """Count one regraded trial against its recorded verdict and sub-verdicts (every regrade's one tally)."""
    if not result.determinate:
        summary.indeterminate += 1
        summary.unsettled.append({"path": path, "predicates": list(result.unsettled)})
        return
    summary.determinable += 1
    metadata = verifier.get("metadata") or {}
    sub = metadata.get("sub_predicates") or {}
    recorded = {"verdict": trial["verdict"], "g1": sub.get("g1_passed"), "g2": sub.get("g2_passed")}
    ours = {"verdict": result.verdict, "g1": result.g1_passed, "g2": result.g2_passed}
    summary.verdict_agree += recorded["verdict"] == ours["verdict"]
    summary.g1_agree += recorded["g1"] == ours["g1"]
    summary.g2_agree += recorded["g2"] == ours["g2"]
    if recorded != ours:
        first = _first_difference(metadata.get("predicates") or [], list(result.results))
        summary.disagreements.append({"path": path, "recorded": recorded, "ours": ours, "predicate": first})


def regrade_files(paths: Iterable[str], rules: str | None = None) -> RegradeSummary:
    """Regrade a batch of files (one worker's chunk); a bad file is counted, never fatal."""
    summary = RegradeSummary()
    memo: SpecMemo = {}
    for path in paths:
        summary.files += 1
        try:
            with open(path, "rb") as handle:  # not Path(path).read_bytes(): same bytes, fewer calls
                raw = handle.read()
            summary.bytes += len(raw)
            trial = orjson.loads(raw)
            if not isinstance(trial, dict) or "messages" not in trial:
                raise PublishedSpecError("not a schema-1.0 trial")
            check_trial(path, trial, rules, summary, memo)
        except (OSError, orjson.JSONDecodeError, PublishedSpecError) as exc:
            summary.errors += 1
            summary.failures.append({"path": path, "error": f"{type(exc).__name__}: {exc}"})
    return summary


def iter_trial_files(paths: Iterable[str | Path]) -> Iterator[str]:
    """Every trial file under ``paths`` (files as given; folders walked in sorted order).

    Raises:
        UsageError: A path does not exist, or a folder holds a grid's transcript archive.
    """
    for given in paths:
        path = Path(given)
        if path.is_file():
            yield str(path)
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".zip"):  # imported here: regrade's workers otherwise load no pyarrow
                        from apiflow.results.archives import refuse_archive

                        refuse_archive(os.path.join(root, name))
                    if name.endswith(".json") and not name.startswith("_"):
                        yield os.path.join(root, name)
        else:
            raise UsageError(f"no such file or folder: {given}")


def _chunks(items: Iterator[str], size: int) -> Iterator[list[str]]:
    while chunk := list(islice(items, size)):
        yield chunk


def regrade(
    paths: Iterable[str | Path],
    *,
    rules: str | None = None,
    workers: int | None = None,
    chunk_files: int = CHUNK_FILES,
) -> RegradeSummary:
    """Regrade every trial file under ``paths`` and compare with the recorded verdicts.

    Args:
        paths: Files or folders.
        rules: Rule set to grade with; ``None`` grades each trial with the rules its payload
            names (``metadata.rules``: ``apiflow-1.1`` for our live trials), else ``published-1.0``.
        workers: Worker processes (default: all cores); 1 grades in this process.
        chunk_files: Files per work item.
    """
    workers = workers or os.cpu_count() or 1
    chunks = _chunks(iter_trial_files(paths), chunk_files)
    total = RegradeSummary()
    first = next(chunks, None)
    second = next(chunks, None)
    if first is None:
        return total
    if workers == 1 or second is None:  # too little work to pay for a pool
        for chunk in chain((first,), (second,) if second else (), chunks):
            total.merge(regrade_files(chunk, rules))
        return total
    window = workers * 4  # bounded in-flight work keeps memory flat
    with ProcessPoolExecutor(max_workers=workers) as pool:
        running: set[Future[RegradeSummary]] = set()
        for chunk in chain((first, second), chunks):
            if len(running) >= window:
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    total.merge(future.result())
            running.add(pool.submit(regrade_files, chunk, rules))
        for future in running:
            total.merge(future.result())
    return total
