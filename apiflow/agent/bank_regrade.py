"""Re-grading stored records with a canary key: its id checked, and against the bank's own spec.

``apiflow regrade`` grades a record by the predicates its verifier payload recorded. Those carry the
trial's per-trial canary forms already, so that needs no key; but checkpoints and constraints are
recorded without their patterns, and a spec fixed since is not applied. With ``--bank`` the task's
whole spec (predicates, checkpoints, constraints) is salted into the trial's forms again, which
takes the trial's canary seed: for a record that names a canary key (``apiflow.canary_key_id``),
that key. A record that names another key than the one given, or a key when none is given, stops
the regrade with one line: graded in the wrong forms, every salted value would fail.
docs/design/011-grader-exploit-audit.md, "Canary keys".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from apiflow.agent.trial import graded_task
from apiflow.bank import Bank
from apiflow.errors import UsageError
from apiflow.grading import grade
from apiflow.grading.published import PublishedSpecError, SpecMemo, generation_of
from apiflow.grading.regrade import RegradeSummary, check_trial, iter_trial_files, recorded_rules, tally_trial
from apiflow.grading.transcript import evidence_from_transcript
from apiflow.results.canary_key import CanaryKey

NEEDS_KEY = "pass --canary-key: the key file, or the results folder that holds it (_secret/canary.key)"


def key_for(path: str, trial: Mapping[str, Any], key: CanaryKey | None) -> CanaryKey | None:
    """The key the trial's forms derive from: ``key`` if the record names it, None if it names none.

    Raises:
        UsageError: The record names a key and ``key`` is missing or another one.
    """
    block = trial.get("apiflow")
    named = block.get("canary_key_id") if isinstance(block, dict) else None
    if named is None:
        return None
    if key is None:
        raise UsageError(f"{path} was salted with canary key {named}: {NEEDS_KEY}")
    if key.id != named:
        raise UsageError(
            f"the canary key given is {key.id}, but {path} was salted with canary key {named}: "
            "pass the key of the results folder that record came from"
        )
    return key


def regrade_with_key(
    paths: Iterable[str | Path],
    *,
    key: CanaryKey | None = None,
    bank: Bank | None = None,
    rules: str | None = None,
) -> RegradeSummary:
    """Regrade every trial file under ``paths`` in this process, checking each record's key first.

    Args:
        paths: Files or folders.
        key: The canary key the records were salted with (records naming none need none).
        bank: Grade against this bank's spec of each task, salted for the trial; None grades by the
            recorded predicates, as ``apiflow.grading.regrade.regrade`` does.
        rules: Rule set (None: the one each payload names).

    Raises:
        UsageError: A record names a canary key other than ``key`` (or ``key`` is None).
    """
    summary = RegradeSummary()
    memo: SpecMemo = {}
    for path in iter_trial_files(paths):
        summary.files += 1
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
            summary.bytes += len(raw)
            trial = orjson.loads(raw)
            if not isinstance(trial, dict) or "messages" not in trial:
                raise PublishedSpecError("not a schema-1.0 trial")
            trial_key = key_for(path, trial, key)
            if bank is None:
                check_trial(path, trial, rules, summary, memo)
            else:
                _check_against_bank(path, trial, bank, trial_key, rules, summary)
        except (OSError, orjson.JSONDecodeError, PublishedSpecError) as exc:
            summary.errors += 1
            summary.failures.append({"path": path, "error": f"{type(exc).__name__}: {exc}"})
    return summary


def _check_against_bank(
    path: str,
    trial: dict[str, Any],
    bank: Bank,
    key: CanaryKey | None,
    rules: str | None,
    summary: RegradeSummary,
) -> None:
    verifier = trial.get("verifier")
    if not trial.get("verdict") or not isinstance(verifier, dict):
        summary.unscored += 1
        return
    block = trial.get("apiflow") or {}
    try:
        task = bank.task(str(trial.get("task_id")))
        seed, epoch = int(block["seed"]), int(trial["trial"])
    except (UsageError, KeyError, TypeError, ValueError) as exc:
        raise PublishedSpecError(f"cannot rebuild its trial from bank {bank.name}: {exc}") from None
    spec = graded_task(task, bank.world_of(task), seed=seed, epoch=epoch, canary_key=key)
    result = grade(
        spec.predicates,
        spec.checkpoints,
        spec.constraints,
        evidence_from_transcript(trial),
        rules=rules or recorded_rules(verifier),
        generation=generation_of(verifier),
    )
    tally_trial(summary, path, trial, verifier, result)
